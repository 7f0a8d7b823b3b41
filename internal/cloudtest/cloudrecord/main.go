// Command cloudrecord runs the three fake clouds of package cloudtest in
// their open mode, which accepts any credential and none, so that a real
// client can be pointed at them to see what it sends before its
// credentials are worked out. It prints the fakes' base URLs and the
// service account file for Vertex, and when its standard input closes (or
// it is interrupted) writes every request it received under -dir, one
// folder per cloud (see cloudtest.WriteCaptures).
//
//	go run ./internal/cloudtest/cloudrecord -dir /tmp/captures
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/focusgate/focusgate/internal/cloudtest"
)

// program stands in for a test: it runs the fakes' cleanups when it ends.
type program struct{ cleanups []func() }

func (p *program) Helper()          {}
func (p *program) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

func main() {
	dir := flag.String("dir", "captures", "where to write what was received")
	text := flag.String("text", "OK", "what the model answers")
	flag.Parse()
	p := &program{}
	answer := cloudtest.TextAnswer(*text)
	b := cloudtest.NewBedrock(p, cloudtest.BedrockOptions{Open: true, Answer: answer})
	v := cloudtest.NewVertex(p, cloudtest.VertexOptions{Open: true, Answer: answer})
	a := cloudtest.NewAzure(p, cloudtest.AzureOptions{Open: true, Answer: answer})
	sa := filepath.Join(*dir, "service-account.json")
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(sa, v.ServiceAccountJSON(), 0o600); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("BEDROCK=%s\nVERTEX=%s\nAZURE=%s\nVERTEX_TOKEN=%s\nGOOGLE_APPLICATION_CREDENTIALS=%s\n", b.URL, v.URL, a.URL, v.Token(), sa)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
	for name, reqs := range map[string][]cloudtest.Request{"bedrock": b.Requests(), "vertex": v.Requests(), "azure": a.Requests()} {
		for i, r := range reqs {
			fmt.Fprintf(os.Stderr, "%s %02d %s %s %d auth=%q\n", name, i+1, r.Method, r.Path, r.Status, r.Auth)
		}
		if len(reqs) > 0 {
			if err := cloudtest.WriteCaptures(filepath.Join(*dir, name), reqs); err != nil {
				log.Print(err)
			}
		}
	}
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
}
