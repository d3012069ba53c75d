//go:build tools

// Package k8s only names the command `make k8s-smoke` builds, so that go mod tidy keeps it.
package k8s

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
