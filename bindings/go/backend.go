package tessera

import (
	"context"
	"strings"
	"sync"
)

// SimpleBackend is the replaced engine's simple interface: whole texts in and out.
type SimpleBackend interface {
	Generate(ctx context.Context, prompt string, opts GenOpts) (string, error)
	Chat(ctx context.Context, messages []Message, opts GenOpts) (string, error)
	Name() string
	Available() bool
}

// TextModel is the replaced engine's model interface: streamed tokens, classification, batches,
// metrics and info. *Model implements it.
type TextModel interface {
	Generate(ctx context.Context, prompt string, opts ...Option) Seq[Token]
	Chat(ctx context.Context, messages []Message, opts ...Option) Seq[Token]
	Err() error
	Classify(ctx context.Context, prompts []string, opts ...Option) ([]ClassifyResult, error)
	BatchGenerate(ctx context.Context, prompts []string, opts ...Option) ([]BatchResult, error)
	Metrics() GenerateMetrics
	Info() ModelInfo
	Close() error
}

var (
	_ SimpleBackend = (*Backend)(nil)
	_ TextModel     = (*Model)(nil)
)

// GenOpts are the simple interface's options. Temperature 0 is greedy (the zero value);
// MaxTokens 0 means 256. Model, when set, names another model directory, loaded on first use
// with the backend's load options and kept until Close.
type GenOpts struct {
	Temperature float64
	MaxTokens   int
	Model       string
}

// Backend implements SimpleBackend over one Model (and those GenOpts.Model names).
type Backend struct {
	dir     string
	opts    []LoadOption
	model   *Model
	loadErr error

	mu     sync.Mutex
	others map[string]*Model
}

// NewBackend loads modelDir. A backend whose model failed to load still exists: Available is
// false and Generate and Chat return the load error.
func NewBackend(modelDir string, opts ...LoadOption) *Backend {
	b := &Backend{dir: modelDir, opts: opts, others: map[string]*Model{}}
	b.model, b.loadErr = LoadModel(modelDir, opts...)
	return b
}

// Name is "tessera".
func (b *Backend) Name() string { return "tessera" }

// Available tells whether the backend's model loaded.
func (b *Backend) Available() bool { return b.model != nil }

// Model is the backend's own model (nil when it failed to load).
func (b *Backend) Model() *Model { return b.model }

// Generate returns the continuation of prompt.
func (b *Backend) Generate(ctx context.Context, prompt string, o GenOpts) (string, error) {
	m, err := b.modelFor(o.Model)
	if err != nil {
		return "", err
	}
	return collect(m.Stream(ctx, Prompt{Text: prompt}, o.options()...))
}

// Chat returns the assistant's reply to messages, rendered with the model's own chat template.
func (b *Backend) Chat(ctx context.Context, messages []Message, o GenOpts) (string, error) {
	m, err := b.modelFor(o.Model)
	if err != nil {
		return "", err
	}
	return collect(m.ChatStream(ctx, messages, o.options()...))
}

// Close closes every model the backend loaded.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, m := range b.others {
		m.Close()
		delete(b.others, k)
	}
	if b.model != nil {
		return b.model.Close()
	}
	return nil
}

func (o GenOpts) options() []Option {
	opts := []Option{WithTemperature(o.Temperature)}
	if o.MaxTokens != 0 {
		opts = append(opts, WithMaxTokens(o.MaxTokens))
	}
	return opts
}

func (b *Backend) modelFor(name string) (*Model, error) {
	if name == "" || name == b.dir || strings.TrimRight(name, "/") == strings.TrimRight(b.dir, "/") {
		if b.model == nil {
			return nil, b.loadErr
		}
		return b.model, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.others[name]; ok {
		return m, nil
	}
	m, err := LoadModel(name, b.opts...)
	if err != nil {
		return nil, err
	}
	b.others[name] = m
	return m, nil
}

func collect(s *Stream) (string, error) {
	s.Tokens()(func(Token) bool { return true })
	if err := s.Err(); err != nil {
		return "", err
	}
	return s.Result().Text, nil
}
