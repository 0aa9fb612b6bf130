// Package deploy holds Trellis's deployment files (the Dockerfile and its
// build script, NATS cluster configurations with accounts, the compose
// file, Kubernetes manifests and Helm values) and, in its tests, the
// checks of them this machine can run without a Docker daemon or a
// Kubernetes cluster.
//
// It has no Go code of its own: it decides nothing and appends no events.
package deploy
