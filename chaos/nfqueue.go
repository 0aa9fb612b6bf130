package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// delayQueue holds every packet a node sends for a while before the
// kernel sends it on: the kernel hands each packet an iptables NFQUEUE
// rule matches to this netlink socket (nfnetlink_queue) and keeps it
// until the verdict, which the queue gives after the delay. It replaces
// `tc netem delay`, missing from kernels without sch_netem: the delay is
// per packet, in the kernel's path, as netem's is (with a jitter,
// packets can be reordered, as with netem).
type delayQueue struct {
	fd     int
	num    uint16
	delay  time.Duration
	jitter time.Duration
	mu     sync.Mutex // one verdict written at a time; guards rng and closed
	closed bool
	rng    *rand.Rand
	wg     sync.WaitGroup
	stop   chan struct{}
	held   sync.WaitGroup // verdicts still pending
}

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue    = 3
	nfqnlMsgPacket     = 0
	nfqnlMsgVerdict    = 1
	nfqnlMsgConfig     = 2
	nfqaPacketHdr      = 1
	nfqaVerdictHdr     = 2
	nfqaCfgCmd         = 1
	nfqaCfgParams      = 2
	nfqaCfgQueueMaxlen = 3
	nfqnlCfgCmdBind    = 1
	nfqnlCopyMeta      = 1
	nfAccept           = 1
)

// openDelayQueue binds queue num in network namespace ns (a name under
// /var/run/netns) and starts giving verdicts: each packet is accepted
// delay ± jitter after it arrived.
func openDelayQueue(ns string, num uint16, delay, jitter time.Duration, number uint64) (*delayQueue, error) {
	fd, err := socketIn(ns)
	if err != nil {
		return nil, err
	}
	q := &delayQueue{fd: fd, num: num, delay: delay, jitter: jitter, rng: rand.New(rand.NewPCG(number, 0x6e6671)), stop: make(chan struct{})}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (ignored since Linux 3.8)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta // the packet's id only, not its bytes
	maxlen := binary.BigEndian.AppendUint32(nil, 65536)
	if err := q.request(nfqnlMsgConfig, unix.NLM_F_ACK, attr(nfqaCfgCmd, cmd)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind queue %d in %s: %w", num, ns, err)
	}
	if err := q.request(nfqnlMsgConfig, unix.NLM_F_ACK, attr(nfqaCfgParams, params), attr(nfqaCfgQueueMaxlen, maxlen)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("configure queue %d in %s: %w", num, ns, err)
	}
	q.wg.Add(1)
	go q.loop()
	return q, nil
}

// inNamespace runs fn on a thread inside network namespace ns: sockets
// fn makes stay in ns.
func inNamespace(ns string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter %s: %w", ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// This thread stays in ns: it is not unlocked, so it ends
		// with this goroutine instead of running others.
		return fmt.Errorf("leave %s: %w", ns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// socketIn opens a netfilter netlink socket inside network namespace ns.
func socketIn(ns string) (int, error) {
	fd := -1
	err := inNamespace(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		return err
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("netlink socket in %s: %w", ns, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind netlink socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return fd, nil
}

// attr encodes one netlink attribute (padded to 4 bytes).
func attr(typ uint16, data []byte) []byte {
	b := make([]byte, 4, 4+len(data)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// message encodes a nfnetlink_queue message for queue num.
func message(msgType uint16, flags uint16, num uint16, attrs ...[]byte) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msgType)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|flags)
	b[16] = unix.AF_UNSPEC // nfgenmsg: family, version 0, queue number (big-endian)
	binary.BigEndian.PutUint16(b[18:], num)
	for _, a := range attrs {
		b = append(b, a...)
	}
	binary.NativeEndian.PutUint32(b, uint32(len(b)))
	return b
}

// request sends a message and, with NLM_F_ACK, waits for its answer.
func (q *delayQueue) request(msgType, flags uint16, attrs ...[]byte) error {
	if err := unix.Sendto(q.fd, message(msgType, flags, q.num, attrs...), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	if flags&unix.NLM_F_ACK == 0 {
		return nil
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			return fmt.Errorf("no answer: %w", err)
		}
		for _, m := range splitMessages(buf[:n]) {
			if m.typ == unix.NLMSG_ERROR && len(m.data) >= 4 {
				if code := int32(binary.NativeEndian.Uint32(m.data)); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
		}
	}
}

// nlMessage is one netlink message: its type and what follows its header.
type nlMessage struct {
	typ  uint16
	data []byte
}

// splitMessages splits a netlink datagram into its messages (a malformed
// tail is ignored).
func splitMessages(b []byte) []nlMessage {
	var out []nlMessage
	for len(b) >= 16 {
		l := int(binary.NativeEndian.Uint32(b))
		if l < 16 || l > len(b) {
			break
		}
		out = append(out, nlMessage{typ: binary.NativeEndian.Uint16(b[4:]), data: b[16:l]})
		l = (l + 3) &^ 3
		if l >= len(b) {
			break
		}
		b = b[l:]
	}
	return out
}

// packetID finds the packet id in a queued-packet message (after its
// nfgenmsg), false when it has none.
func packetID(data []byte) (uint32, bool) {
	if len(data) < 4 {
		return 0, false
	}
	b := data[4:]
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff
		if l < 4 || l > len(b) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(b[4:]), true
		}
		l = (l + 3) &^ 3
		if l >= len(b) {
			break
		}
		b = b[l:]
	}
	return 0, false
}

// loop reads queued packets and schedules their verdicts until Close.
func (q *delayQueue) loop() {
	defer q.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-q.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
				continue
			}
			return
		}
		for _, m := range splitMessages(buf[:n]) {
			if m.typ != nfnlSubsysQueue<<8|nfqnlMsgPacket {
				continue
			}
			id, ok := packetID(m.data)
			if !ok {
				continue
			}
			q.mu.Lock()
			d := q.delay
			if q.jitter > 0 {
				d += time.Duration(q.rng.Int64N(int64(2*q.jitter))) - q.jitter
			}
			q.mu.Unlock()
			q.held.Add(1)
			time.AfterFunc(max(d, 0), func() { defer q.held.Done(); q.verdict(id, nfAccept) })
		}
	}
}

// verdict tells the kernel what to do with packet id.
func (q *delayQueue) verdict(id uint32, v uint32) {
	hdr := binary.BigEndian.AppendUint32(nil, v)
	hdr = binary.BigEndian.AppendUint32(hdr, id)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	_ = q.request(nfqnlMsgVerdict, 0, attr(nfqaVerdictHdr, hdr))
}

// Close stops reading, gives the packets held their verdicts and closes
// the socket (the kernel drops packets queued but not yet read: remove
// the NFQUEUE rule first; TCP sends those again).
func (q *delayQueue) Close(ctx context.Context) {
	close(q.stop)
	q.wg.Wait() // within the socket's 200 ms receive timeout
	done := make(chan struct{})
	go func() { q.held.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	q.mu.Lock()
	q.closed = true
	unix.Close(q.fd)
	q.mu.Unlock()
}
