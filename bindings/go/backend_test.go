package tessera

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimpleBackend(t *testing.T) {
	var b SimpleBackend = NewBackend(tinyEn, WithDevice("cpu"), WithContextLen(256))
	defer b.(*Backend).Close()
	if !b.Available() || b.Name() != "tessera" {
		t.Fatalf("available %v, name %q", b.Available(), b.Name())
	}
	ctx := context.Background()
	// Temperature 0 (GenOpts' zero value) is greedy: the CLI's text.
	text, err := b.Generate(ctx, kingPrompt, GenOpts{MaxTokens: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := generateCLI(t, "--model", tinyEn, "--prompt", kingPrompt, "--temperature", "0",
		"--max-tokens", "20")
	if text != want.Text {
		t.Errorf("%q, the CLI's %q", text, want.Text)
	}
	msgs := []Message{{Role: "user", Content: "What is a fool?"}}
	reply, err := b.Chat(ctx, msgs, GenOpts{MaxTokens: 16, Model: tinyEn + "/"})
	if err != nil {
		t.Fatal(err)
	}
	s := b.(*Backend).Model().ChatStream(ctx, msgs, WithTemperature(0), WithMaxTokens(16))
	if _, err := collectStream(s); err != nil || s.Result().Text != reply {
		t.Errorf("chat %q, the model's %q (%v)", reply, s.Result().Text, err)
	}
	// Sampling with a temperature is still within the options' bounds.
	if _, err := b.Generate(ctx, kingPrompt, GenOpts{Temperature: 0.7, MaxTokens: 8}); err != nil {
		t.Error(err)
	}
	if _, err := b.Generate(ctx, kingPrompt, GenOpts{Temperature: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative temperature: %v", err)
	}
	// GenOpts.Model names another directory: loaded on first use (this one has no tokenizer).
	other := filepath.Join(repo, "tests", "fixtures", "models", "llama3")
	if _, err := b.Generate(ctx, "hi", GenOpts{Model: other}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("model without a tokenizer: %v", err)
	}
	if _, err := b.Generate(ctx, "hi", GenOpts{Model: "/no/such/model"}); !errors.Is(err, ErrIO) {
		t.Errorf("missing model: %v", err)
	}
	// A cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Generate(cctx, kingPrompt, GenOpts{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestSimpleBackendWhoseModelDidNotLoad(t *testing.T) {
	b := NewBackend("/no/such/dir")
	if b.Available() {
		t.Fatal("available")
	}
	_, err := b.Generate(context.Background(), "x", GenOpts{})
	if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("generate: %v", err)
	}
	if _, err := b.Chat(context.Background(), nil, GenOpts{}); !errors.Is(err, ErrIO) {
		t.Errorf("chat: %v", err)
	}
	if b.Close() != nil {
		t.Error("close")
	}
}
