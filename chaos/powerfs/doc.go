// Package powerfs is a FUSE filesystem for power-loss tests: a loopback
// over a backing directory that keeps every file's writes in memory until
// the file is fsynced, and drops whatever was not synced when PowerLoss
// is called — what a disk's volatile cache and the page cache lose when a
// machine loses power. Directory operations (create, rename, unlink,
// mkdir) reach the backing directory at once.
//
// It knows nothing of Trellis's log: it decides nothing and appends no
// events.
package powerfs
