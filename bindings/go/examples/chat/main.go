// Command chat is a small terminal chat over tessera's Go package: it keeps the conversation,
// renders it with the model's own chat template and streams each reply as it is generated.
// Ctrl-C stops the reply in progress (its KV blocks are freed at once); Ctrl-D or /quit ends.
//
//	go run ./examples/chat -model ../../models/tessera-tiny-en
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"tessera"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(errOut)
	model := fs.String("model", "", "model directory (Hugging Face format)")
	device := fs.String("device", "auto", "auto, cpu or cuda")
	system := fs.String("system", "", "system prompt")
	temperature := fs.Float64("temperature", 0.8, "sampling temperature (0: greedy)")
	maxTokens := fs.Int("max-tokens", 256, "tokens per reply at most")
	seed := fs.Int64("seed", -1, "sampling seed (-1: from the clock)")
	metrics := fs.Bool("metrics", false, "print each reply's metrics")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return fmt.Errorf("-model is required")
	}
	m, err := tessera.LoadModel(*model, tessera.WithDevice(*device))
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	fmt.Fprintf(errOut, "%s on %s, %d-token context; /quit to end\n", info.Architecture,
		info.Device, info.ContextLength)

	var history []tessera.Message
	if *system != "" {
		history = append(history, tessera.Message{Role: "system", Content: *system})
	}
	opts := []tessera.Option{tessera.WithTemperature(*temperature),
		tessera.WithMaxTokens(*maxTokens), tessera.WithSeed(*seed)}
	lines := bufio.NewScanner(in)
	for {
		fmt.Fprint(out, "> ")
		if !lines.Scan() {
			fmt.Fprintln(out)
			return lines.Err()
		}
		line := strings.TrimSpace(lines.Text())
		if line == "" {
			continue
		}
		if line == "/quit" {
			return nil
		}
		history = append(history, tessera.Message{Role: "user", Content: line})
		// Ctrl-C during a reply cancels that reply only.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		s := m.ChatStream(ctx, history, opts...)
		s.Tokens()(func(t tessera.Token) bool {
			fmt.Fprint(out, t.Text)
			return true
		})
		stop()
		fmt.Fprintln(out)
		switch err := s.Err(); {
		case err == context.Canceled:
			fmt.Fprintln(errOut, "(stopped)")
		case err != nil:
			history = history[:len(history)-1] // the turn the engine refused
			fmt.Fprintln(errOut, "error:", err)
			continue
		}
		history = append(history, tessera.Message{Role: "assistant", Content: s.Result().Text})
		if *metrics {
			mt := s.Result().Metrics
			fmt.Fprintf(errOut, "[%d prompt + %d tokens, first after %v, %.1f tokens/s]\n",
				mt.PromptTokens, mt.GeneratedTokens, mt.TimeToFirstToken, mt.DecodeTokensPerSec)
		}
	}
}
