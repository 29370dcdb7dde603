package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// signals turns the first SIGINT or SIGTERM into a cancelled context, for
// run, sweep and reproduce alike: the work in progress sees ctx.Done(),
// writes its checkpoint and returns, and the command exits 128+signal.
type signals struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	got    chan syscall.Signal
	timer  *time.Timer // interruptAfter's (nil: none)
}

// interruptAfter lets tests bound the time of any command that catches
// signals: a simulated SIGINT after this long (0: never).
var interruptAfter time.Duration

// catchSignals starts listening; call stop when the work is over.
func catchSignals() *signals {
	s := &signals{sigs: make(chan os.Signal, 1), got: make(chan syscall.Signal, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	signal.Notify(s.sigs, os.Interrupt, syscall.SIGTERM)
	if interruptAfter > 0 {
		s.timer = time.AfterFunc(interruptAfter, func() {
			select {
			case s.sigs <- syscall.SIGINT:
			default: // a signal is already there
			}
		})
	}
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
	if s.timer != nil {
		s.timer.Stop()
	}
	s.cancel()
}

// interruptMonteCarlo lets tests deliver a simulated SIGINT as an eval's
// Monte Carlo starts.
var interruptMonteCarlo bool

// interruptible runs eval's Monte Carlo of n rollouts with SIGINT and
// SIGTERM caught: the rollouts stop, and the command says so in one line
// and exits 128+signal, printing nothing else.
func interruptible[T any](what string, n int, f func(ctx context.Context) (T, error)) (T, error) {
	sig := catchSignals()
	defer sig.stop()
	if interruptMonteCarlo {
		sig.interrupt(syscall.SIGINT)
	}
	res, err := f(sig.ctx)
	if err != nil && sig.ctx.Err() != nil {
		caught := sig.caught()
		return res, signalled{caught, fmt.Sprintf("eval: interrupted by %v during the %s of %d rollouts: no result printed (fewer rollouts, -mc, or a -horizon end sooner)", caught, what, n)}
	}
	return res, err
}
