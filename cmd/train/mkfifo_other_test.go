//go:build !unix

package main

import "errors"

func mkfifo(string) error { return errors.New("mkfifo: not supported on this platform") }
