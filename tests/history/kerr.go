package main

import "github.com/twmb/franz-go/pkg/kerr"

// kerrOf gives the error for a Kafka error code (nil for 0).
func kerrOf(code int16) error { return kerr.ErrorForCode(code) }
