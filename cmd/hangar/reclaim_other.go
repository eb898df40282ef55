//go:build !linux

package main

// releaseBinaryPages is Linux's alone (reclaim_linux.go).
func releaseBinaryPages() {}
