package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file is the one place where the JetStream API's numeric error codes
// and the client's transport errors are classified. Everything else in
// Trellis asks jsClassOf (or the exported predicates below) what an error
// means; no other file compares error codes.

// JetStream API error codes Trellis acts on (nats-server errors.json).
const (
	jsCodeNoPeers           = 10005 // "no suitable peers for placement"
	jsCodeClusterNotAvail   = 10008 // "JetStream system temporarily unavailable" (no meta leader)
	jsCodeStreamCreate      = 10049 // "{err}" creating a stream failed (storeCreateFailed: its store)
	jsCodeMsgNotFound       = 10037 // "no message found"
	jsCodeNotEnabledAccount = 10039 // "JetStream not enabled for account"
	jsCodeStreamNotFound    = 10059 // "stream not found"
	jsCodeWrongLastSeq      = 10071 // "wrong last sequence: {seq}"
	jsCodeNotEnabled        = 10076 // "JetStream not enabled"
	jsCodeStoreFailed       = 10077 // "{err}" storing a message failed
	jsCodeStreamOffline     = 10118 // "stream is offline"
	jsCodeDupInProcess      = 10158 // "duplicate message id is in process"
	jsCodeWrongLastSeqConst = 10164 // "wrong last sequence" (replicated streams)
	jsCodeBatchDuplicate    = 10201 // "atomic publish batch contains duplicate message id"
)

// jsClass is what an error from JetStream means for the caller.
type jsClass int

const (
	// jsOther: a final error (bad request, limits, a bug): report it.
	jsOther jsClass = iota
	// jsWrongLastSeq: the append's concurrency check failed (someone
	// else appended first, or an earlier attempt of ours was stored).
	jsWrongLastSeq
	// jsInDoubt: the server is still committing an earlier attempt of
	// the same message id (replicated streams): it may or may not be
	// stored. Wait and send it again; the duplicate window answers.
	jsInDoubt
	// jsBatchDuplicate: an atomic batch held a message id already stored.
	jsBatchDuplicate
	// jsUnanswered: no answer (timeout, no responders, a reconnect): the
	// request may or may not have taken effect; sending it again is safe
	// for idempotent requests.
	jsUnanswered
	// jsForming: the cluster cannot place or serve the request yet (no
	// meta leader, not enough peers, stream offline): retry later.
	jsForming
	// jsUnavailable: JetStream cannot answer now and retrying this very
	// request will not help soon (connection closed, JetStream off, a
	// failed store on the server).
	jsUnavailable
	// jsNotFound: no such message or stream.
	jsNotFound
	// jsPermission: the NATS user may not publish or subscribe to the
	// subject the request needs (a permissions violation).
	jsPermission
)

// jsCode returns the JetStream API error code carried by err (0 when it
// carries none).
func jsCode(err error) int {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return int(apiErr.ErrorCode)
	}
	var be *BatchError
	if errors.As(err, &be) {
		return be.ErrCode
	}
	return 0
}

// isMsgNotFound reports JetStream's "no message found" (a message get
// past the last match), and no other not-found (a missing stream is).
func isMsgNotFound(err error) bool { return jsCode(err) == jsCodeMsgNotFound }

// jsClassOf classifies an error returned by a JetStream request.
func jsClassOf(err error) jsClass {
	if err == nil {
		return jsOther
	}
	if errors.Is(err, ErrPermissionDenied) || errors.Is(err, nats.ErrPermissionViolation) {
		return jsPermission
	}
	switch jsCode(err) {
	case jsCodeWrongLastSeq, jsCodeWrongLastSeqConst:
		return jsWrongLastSeq
	case jsCodeDupInProcess:
		return jsInDoubt
	case jsCodeBatchDuplicate:
		return jsBatchDuplicate
	case jsCodeNoPeers, jsCodeClusterNotAvail, jsCodeStreamOffline:
		return jsForming
	case jsCodeNotEnabled, jsCodeNotEnabledAccount, jsCodeStoreFailed:
		return jsUnavailable
	case jsCodeMsgNotFound, jsCodeStreamNotFound:
		return jsNotFound
	case 0:
	default:
		return jsOther
	}
	switch {
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return jsUnanswered
	case errors.Is(err, context.Canceled), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return jsUnavailable
	case errors.Is(err, jetstream.ErrMsgNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return jsNotFound
	case strings.Contains(strings.ToLower(err.Error()), nats.PERMISSIONS_ERR):
		return jsPermission
	}
	return jsOther
}

// ErrPermissionDenied reports a NATS permissions violation: the
// connection's user may not use a subject Trellis needs (the JetStream
// API, a stream's subjects). Retrying does not help; the NATS
// configuration must grant it.
var ErrPermissionDenied = errors.New("NATS permissions violation")

// permissionError returns an error wrapping ErrPermissionDenied when the
// connection has seen a permissions violation (the server reports them
// asynchronously: the request itself only times out), else nil.
func permissionError(nc *nats.Conn) error {
	if nc == nil {
		return nil
	}
	// A connection not allowed the leader-election advisories (see
	// leaderWatch) is not refused its appends.
	if last := nc.LastError(); last != nil && jsClassOf(last) == jsPermission &&
		!strings.Contains(strings.ToLower(last.Error()), strings.ToLower(leaderElectedPrefix)) {
		return errors.Join(ErrPermissionDenied, last)
	}
	return nil
}

// retryable reports errors after which the append may or may not have been
// stored and sending it again is safe (the message id de-duplicates).
func retryable(err error) bool {
	c := jsClassOf(err)
	return c == jsUnanswered || c == jsInDoubt
}

// IsUnavailable reports errors that mean JetStream could not answer now
// (no responders while a stream or consumer elects its leader, a timeout,
// a lost or closed connection, JetStream off, a cluster without quorum)
// rather than that the request was wrong: callers report them as
// unavailable, worth retrying.
func IsUnavailable(err error) bool {
	switch jsClassOf(err) {
	case jsUnanswered, jsInDoubt, jsForming, jsUnavailable:
		return true
	}
	return false
}

// IsPermissionDenied reports a NATS permissions violation (see
// ErrPermissionDenied).
func IsPermissionDenied(err error) bool { return jsClassOf(err) == jsPermission }

// storeCreateFailed reports that the server could not create a stream's
// store while creating the stream: a stream create error (10049, whose
// description is the cause) saying "error creating store for stream"
// (the server logs the cause and answers only that). Nothing was created.
func storeCreateFailed(err error) bool {
	var apiErr *jetstream.APIError
	return jsCode(err) == jsCodeStreamCreate && errors.As(err, &apiErr) &&
		strings.Contains(apiErr.Description, "error creating store for stream")
}

// clusterForming reports an error of a cluster that cannot answer yet.
// No responders means no JetStream at all (a server without it), not one
// still forming: that fails at once.
func clusterForming(err error) bool {
	switch jsClassOf(err) {
	case jsForming:
		return true
	case jsUnanswered:
		return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
	}
	return false
}

// jsCodeMsgDeleteFailed is JetStream's "message deletion failed" (its
// description says why: "no message found" for a sequence not there);
// jsCodeSeqNotFound its "sequence <n> not found".
const (
	jsCodeMsgDeleteFailed = 10057
	jsCodeSeqNotFound     = 10043
)

// IsDeletedBefore reports that a message delete failed because the
// sequence holds no message: it was removed before (an idempotent
// delete's second time).
func IsDeletedBefore(err error) bool {
	if err == nil {
		return false
	}
	if jsClassOf(err) == jsNotFound {
		return true
	}
	switch jsCode(err) {
	case jsCodeMsgDeleteFailed:
		return strings.Contains(err.Error(), "no message found")
	case jsCodeSeqNotFound:
		return true
	}
	// The client reports a failed delete in words only
	// (ErrMsgDeleteUnsuccessful with the API error's text).
	msg := err.Error()
	return errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) &&
		(strings.Contains(msg, "err_code=10043") || strings.Contains(msg, "err_code=10057") && strings.Contains(msg, "no message found"))
}

// directKind is what one answer to a direct get ($JS.API.DIRECT.GET) is.
type directKind int

const (
	// directMsg: a stored message.
	directMsg directKind = iota
	// directEnd: status 204, the end of a batch (its Nats-Num-Pending
	// header counts the matching messages after it).
	directEnd
	// directNone: status 404, nothing (more) matches.
	directNone
	// directUnanswered: status 503, no responders (a stream electing
	// its leader); the error wraps nats.ErrNoResponders.
	directUnanswered
	// directRefused: status 408 or 413, the server refused the request
	// as too large (more subjects than one answer holds) or as one it
	// does not know (an older server): smaller requests may be served.
	directRefused
	// directFailed: any other status (a server error).
	directFailed
)

// classifyDirect classifies one answer to a direct get. For every answer
// but a message it also returns the status as an error (nats.ErrNoResponders
// for 503), for callers to report an answer they do not expect.
func classifyDirect(msg *nats.Msg) (directKind, error) {
	if len(msg.Data) > 0 || msg.Header == nil {
		return directMsg, nil
	}
	st := msg.Header.Get("Status")
	err := fmt.Errorf("direct get status %s %s", st, msg.Header.Get("Description"))
	switch st {
	case "":
		return directMsg, nil
	case "204":
		return directEnd, err
	case "404":
		return directNone, err
	case "503":
		return directUnanswered, nats.ErrNoResponders
	case "408", "413":
		return directRefused, err
	}
	return directFailed, err
}

// subscriptionGone reports whether err, from an Unsubscribe, says there
// is nothing left to undo: the connection is closed (which ended every
// subscription) or the subscription is no longer valid.
func subscriptionGone(err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription)
}
