package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
	clientkeys "github.com/focusgate/focusgate/internal/keys"
	"github.com/focusgate/focusgate/internal/redact"
	"github.com/focusgate/focusgate/proxy"
)

// keysPollInterval is how often the keys file is read again to notice a
// change (SIGHUP reloads it at once).
const keysPollInterval = 5 * time.Second

// newRedactor scrubs the configuration's own keys, as well as anything
// shaped like a key, from every log line.
func newRedactor(cfg config.Config) *redact.Redactor {
	return redact.New(configuredKeys(cfg)...)
}

// configuredKeys are the keys of the configuration: the retriever's and
// every provider's upstream key.
func configuredKeys(cfg config.Config) []string {
	keys := []string{cfg.RetrieverAPIKey}
	for _, p := range focusgate.Providers {
		keys = append(keys, cfg.Upstream(p).Key)
	}
	return keys
}

// openKeys reads FOCUSGATE_CLIENT_KEYS_FILE; nil when it is not set. The
// file's plain-text keys join the secrets scrubbed from the logs.
func openKeys(cfg config.Config, log *slog.Logger, secrets *redact.Redactor) (*clientkeys.File, error) {
	if cfg.ClientKeysFile == "" {
		return nil, nil
	}
	f, err := clientkeys.Open(cfg.ClientKeysFile, log)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%sCLIENT_KEYS_FILE: %s does not exist. It holds one gateway key per line, name:key "+
			"(e.g. alice:$(openssl rand -hex 24)), or name:sha256:<hex of the key's SHA-256>; create it where the gateway runs "+
			"(in a container: mount it there), or unset %sCLIENT_KEYS_FILE to run without gateway keys", config.Prefix, cfg.ClientKeysFile, config.Prefix)
	case err != nil:
		return nil, fmt.Errorf("%sCLIENT_KEYS_FILE: %w", config.Prefix, err)
	}
	secrets.SetSecrets(append(f.Current().Secrets(), configuredKeys(cfg)...)...)
	return f, nil
}

// gatewayKeys is f as the gateway's Keys: nil, not a nil *clientkeys.File, when
// no keys file is configured, so that the gateway stays open.
func gatewayKeys(f *clientkeys.File) proxy.Keys {
	if f == nil {
		return nil
	}
	return f
}

// watchKeys keeps the gateway in step with the keys file until ctx ends:
// it reloads on SIGHUP and when the file changes, and tells the gateway and
// the log scrubber about the new keys. Requests keep being served
// throughout; a bad file keeps the keys in use.
func watchKeys(ctx context.Context, cfg config.Config, f *clientkeys.File, gateway *proxy.Server, secrets *redact.Redactor) {
	f.Notify(func(set *clientkeys.Set, err error) {
		if err != nil {
			return
		}
		secrets.SetSecrets(append(set.Secrets(), configuredKeys(cfg)...)...)
		gateway.KeysChanged(set.Names())
	})
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		f.Watch(ctx, keysPollInterval, hup)
	}()
}
