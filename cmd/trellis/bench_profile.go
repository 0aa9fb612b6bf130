package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// benchProfiles are the profile files a benchmark run writes
// (--cpuprofile, --memprofile, --blockprofile, --mutexprofile).
type benchProfiles struct {
	cpu, mem, block, mutex string
	cpuFile                *os.File
}

// profiled adds the profile flags to the bench command and wraps each
// benchmark so its profiles are written whether it succeeds or fails (an
// interrupted run still leaves its profiles).
func profiled(c *cobra.Command) {
	prof := &benchProfiles{}
	prof.addFlags(c)
	for _, sub := range c.Commands() {
		run := sub.RunE
		if run == nil {
			continue
		}
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			if err := prof.start(); err != nil {
				return err
			}
			err := run(cmd, args)
			if serr := prof.stop(); err == nil {
				err = serr
			}
			return err
		}
	}
}

// addFlags registers the profile flags on the bench command.
func (p *benchProfiles) addFlags(c *cobra.Command) {
	f := c.PersistentFlags()
	f.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	f.StringVar(&p.mem, "memprofile", "", "write an allocation profile of the run to this file (go tool pprof -sample_index=alloc_space)")
	f.StringVar(&p.block, "blockprofile", "", "write a blocking profile of the run to this file (every blocking event sampled)")
	f.StringVar(&p.mutex, "mutexprofile", "", "write a mutex contention profile of the run to this file (every contention sampled)")
}

// start begins the profiles asked for.
func (p *benchProfiles) start() error {
	if p.mem != "" {
		runtime.MemProfileRate = 64 * 1024
	}
	if p.block != "" {
		runtime.SetBlockProfileRate(1)
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if p.cpu == "" {
		return nil
	}
	f, err := os.Create(p.cpu)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	p.cpuFile = f
	return nil
}

// stop ends the CPU profile and writes the others.
func (p *benchProfiles) stop() error {
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		p.cpuFile = nil
	}
	defer runtime.SetBlockProfileRate(0)
	defer runtime.SetMutexProfileFraction(0)
	for _, w := range []struct{ name, path string }{{"allocs", p.mem}, {"block", p.block}, {"mutex", p.mutex}} {
		if w.path == "" {
			continue
		}
		if err := writeProfile(w.name, w.path); err != nil {
			return err
		}
	}
	return nil
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("%s profile: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return nil
}
