package keys

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// File is a keys file that can be reloaded while it is in use: look-ups
// always see one complete Set, the old one until a new one has parsed.
type File struct {
	path string
	log  *slog.Logger
	cur  atomic.Pointer[Set]

	mu sync.Mutex // serialises reloads
	// seen is the digest of the content last read, good or bad, so that an
	// unchanged file is neither parsed nor reported again.
	seen   [sha256.Size]byte
	notify []func(*Set, error)
}

// Open reads the keys file at path. Unlike a reload, it fails on a file
// that holds no key: a gateway that rejects everyone is a mistake at start.
func Open(path string, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &File{path: path, log: log}
	data, err := f.read()
	if err != nil {
		return nil, err
	}
	set, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if set.Len() == 0 {
		return nil, fmt.Errorf("%s: %w: no keys", path, ErrInvalid)
	}
	f.seen = sha256.Sum256(data)
	f.cur.Store(set)
	return f, nil
}

// Lookup returns the name of a presented key (see Set.Lookup).
func (f *File) Lookup(presented string) (string, bool) { return f.cur.Load().Lookup(presented) }

// Names lists the names of the keys in use.
func (f *File) Names() []string { return f.cur.Load().Names() }

// Current returns the keys in use.
func (f *File) Current() *Set { return f.cur.Load() }

// Notify registers fn to be called after every reload that found the file
// changed: with the new Set, or with the error that kept the old one.
func (f *File) Notify(fn func(*Set, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notify = append(f.notify, fn)
}

// Reload reads the file again. A file that cannot be read or parsed keeps
// the keys in use, and the error is logged once per distinct content. A file
// emptied of keys is accepted, so that removing the last key revokes it.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := f.read()
	if err != nil {
		f.log.Error("keys file: cannot read it; keeping the keys in use", "path", f.path, "err", err)
		return err
	}
	sum := sha256.Sum256(data)
	if sum == f.seen {
		return nil
	}
	f.seen = sum
	set, err := Parse(data)
	if err != nil {
		err = fmt.Errorf("%s: %w", f.path, err)
		f.log.Error("keys file: invalid; keeping the keys in use", "err", err)
	} else {
		f.cur.Store(set)
		if set.Len() == 0 {
			f.log.Warn("keys file reloaded with no keys: every proxied request is rejected", "path", f.path)
		} else {
			f.log.Info("keys file reloaded", "path", f.path, "keys", set.Len())
		}
	}
	for _, fn := range f.notify {
		fn(f.cur.Load(), err)
	}
	return err
}

// Watch reloads the file whenever hup delivers (SIGHUP) and every interval,
// until ctx ends. Polling the content rather than watching inodes also
// follows the symlink swap with which Kubernetes updates a mounted Secret.
func (f *File) Watch(ctx context.Context, interval time.Duration, hup <-chan os.Signal) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			f.log.Info("SIGHUP: reloading the keys file", "path", f.path)
			f.forceReload()
		case <-tick.C:
			_ = f.Reload()
		}
	}
}

// forceReload reloads even an unchanged file, so that a SIGHUP after a
// failed reload reports the problem again.
func (f *File) forceReload() {
	f.mu.Lock()
	f.seen = [sha256.Size]byte{}
	f.mu.Unlock()
	_ = f.Reload()
}

func (f *File) read() ([]byte, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", f.path, ErrInvalid, MaxFileBytes)
	}
	return data, nil
}
