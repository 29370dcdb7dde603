package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// signals turns the first SIGINT or SIGTERM into a cancelled context, for
// run, sweep and reproduce alike: the work in progress sees ctx.Done(),
// writes its checkpoint and returns, and the command exits 128+signal.
type signals struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	got    chan syscall.Signal
}

// catchSignals starts listening; call stop when the work is over.
func catchSignals() *signals {
	s := &signals{sigs: make(chan os.Signal, 1), got: make(chan syscall.Signal, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	signal.Notify(s.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-s.sigs:
			s.interrupt(sig.(syscall.Signal))
		case <-s.ctx.Done():
		}
	}()
	return s
}

// interrupt cancels the context as sig would (tests simulate a signal
// with it).
func (s *signals) interrupt(sig syscall.Signal) {
	s.got <- sig
	s.cancel()
}

// caught is the signal that cancelled the context; call it only once the
// work has returned because of the cancellation.
func (s *signals) caught() syscall.Signal { return <-s.got }

// stop stops listening and releases the context.
func (s *signals) stop() {
	signal.Stop(s.sigs)
	s.cancel()
}
