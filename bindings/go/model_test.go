package tessera

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kingPrompt = "And it came to pass, when the king"

func TestGreedyEqualsTheCLI(t *testing.T) {
	m := shared(t)
	ctx := context.Background()
	var toks []Token
	for tok := range chanOf(m.Generate(ctx, kingPrompt, WithTemperature(0), WithMaxTokens(32))) {
		toks = append(toks, tok)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	want := generateCLI(t, "--model", tinyEn, "--prompt", kingPrompt, "--temperature", "0",
		"--max-tokens", "32", "--context", "256")
	if !equalIDs(idsOf(toks), want.IDs) {
		t.Errorf("ids %v, the CLI's %v", idsOf(toks), want.IDs)
	}
	if textOf(toks) != want.Text {
		t.Errorf("text %q, the CLI's %q", textOf(toks), want.Text)
	}
	// Token ids as the prompt, and temperature 0 greedy whatever else is set.
	ids, err := m.Tokenize(kingPrompt, true)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stream(ctx, Prompt{IDs: ids}, WithTemperature(0), WithTopK(3), WithSeed(7),
		WithMaxTokens(32))
	got, err := collectStream(s)
	if err != nil {
		t.Fatal(err)
	}
	if !equalIDs(idsOf(got), want.IDs) || s.Result().Text != want.Text {
		t.Errorf("from ids: %v %q", idsOf(got), s.Result().Text)
	}
	if s.Result().FinishReason != want.FinishReason {
		t.Errorf("finish %q, the CLI's %q", s.Result().FinishReason, want.FinishReason)
	}
}

// chanOf turns a Seq into a channel, so that the test reads as a range loop does on Go 1.23.
func chanOf[V any](seq Seq[V]) <-chan V {
	ch := make(chan V)
	go func() {
		defer close(ch)
		seq(func(v V) bool { ch <- v; return true })
	}()
	return ch
}

func TestSeededSamplingIsReproducibleAndEqualsTheCLI(t *testing.T) {
	m := shared(t)
	a, err := collectStream(m.Stream(context.Background(), Prompt{Text: kingPrompt},
		WithSeed(42), WithMaxTokens(24)))
	if err != nil {
		t.Fatal(err)
	}
	want := generateCLI(t, "--model", tinyEn, "--prompt", kingPrompt, "--seed", "42",
		"--max-tokens", "24")
	if !equalIDs(idsOf(a), want.IDs) {
		t.Errorf("seed 42: %v, the CLI's %v", idsOf(a), want.IDs)
	}
}

type fixture struct {
	Sequences [][]int32 `json:"sequences"`
	Greedy    [][]int32 `json:"greedy"`
	EOS       []int32   `json:"eos_token_id"`
	NewTokens int       `json:"new_tokens"`
}

// Every transformers fixture model (no tokenizer: token ids in and out) through every method:
// greedy streams equal transformers' generate(), batches equal them, classify picks their first
// token, and text-only calls fail with an error.
func TestFixtureModelsThroughEveryMethod(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(repo, "tests", "fixtures", "models", "*", "expected.json"))
	if len(dirs) == 0 {
		t.Fatal("no fixture models")
	}
	ctx := context.Background()
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var fx fixture
			if err := json.Unmarshal(raw, &fx); err != nil {
				t.Fatal(err)
			}
			m, err := LoadModel(dir, WithDevice("cpu"), WithDType("f32"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Info().HasTokenizer || m.Info().VocabSize == 0 {
				t.Fatalf("info: %+v", m.Info())
			}
			var prompts []Prompt
			for i, seq := range fx.Sequences {
				prompts = append(prompts, Prompt{IDs: seq})
				s := m.Stream(ctx, Prompt{IDs: seq}, WithTemperature(0), WithMaxTokens(fx.NewTokens))
				toks, err := collectStream(s)
				if err != nil {
					t.Fatal(err)
				}
				got := idsOf(toks)
				if s.Result().FinishReason == "stop" { // the EOS transformers counts
					got = append(got, fx.Greedy[i][len(fx.Greedy[i])-1])
				}
				if !equalIDs(got, fx.Greedy[i]) {
					t.Errorf("sequence %d: %v, transformers %v", i, got, fx.Greedy[i])
				}
				if m.Metrics().PromptTokens != len(seq) {
					t.Errorf("metrics: %+v", m.Metrics())
				}
			}
			batch, err := m.BatchGeneratePrompts(ctx, prompts, WithTemperature(0),
				WithMaxTokens(fx.NewTokens))
			if err != nil {
				t.Fatal(err)
			}
			cls, err := m.ClassifyPrompts(ctx, prompts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range prompts {
				if batch[i].Err != nil {
					t.Fatal(batch[i].Err)
				}
				want := fx.Greedy[i]
				if batch[i].FinishReason == "stop" {
					want = want[:len(want)-1]
				}
				if !equalIDs(idsOf(batch[i].Tokens), want) {
					t.Errorf("batch %d: %v, transformers %v", i, idsOf(batch[i].Tokens), want)
				}
				if cls[i].Err != nil || cls[i].Token.ID != fx.Greedy[i][0] {
					t.Errorf("classify %d: %+v, transformers' first %d", i, cls[i], fx.Greedy[i][0])
				}
			}
			// Text needs a tokenizer; chat needs a template: errors, not crashes.
			if _, err := collectStream(m.Stream(ctx, Prompt{Text: "hello"})); !isStatus(err, StatusInvalidArgument) {
				t.Errorf("text prompt without a tokenizer: %v", err)
			}
			if _, err := collectStream(m.ChatStream(ctx, []Message{{"user", "hi"}})); !isStatus(err, StatusInvalidArgument) {
				t.Errorf("chat without a template: %v", err)
			}
		})
	}
}

var batchPrompts = []string{
	"And it came to pass", "The king said unto", "In the beginning", "Blessed are the",
	"HONEST, adj.", "A fool and his", "The hacker", "Thou shalt not",
}

func TestBatchEqualsOneAtATime(t *testing.T) {
	m := shared(t)
	ctx := context.Background()
	opts := []Option{WithTemperature(0), WithMaxTokens(16)}
	rs, err := m.BatchGenerate(ctx, batchPrompts, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(batchPrompts) {
		t.Fatalf("%d results", len(rs))
	}
	generated := 0
	for i, p := range batchPrompts {
		s := m.Stream(ctx, Prompt{Text: p}, opts...)
		one, err := collectStream(s)
		if err != nil || rs[i].Err != nil {
			t.Fatal(err, rs[i].Err)
		}
		if fmt.Sprint(rs[i].Tokens) != fmt.Sprint(one) {
			t.Errorf("prompt %d: batch %v, alone %v", i, rs[i].Tokens, one)
		}
		if rs[i].Text != s.Result().Text || rs[i].FinishReason != s.Result().FinishReason {
			t.Errorf("prompt %d: %q %s, alone %q %s", i, rs[i].Text, rs[i].FinishReason,
				s.Result().Text, s.Result().FinishReason)
		}
		generated += rs[i].Metrics.GeneratedTokens
	}
	// The last call's metrics: a batch's sum its prompts'.
	rs2, err := m.BatchGenerate(ctx, batchPrompts[:2], opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Metrics().GeneratedTokens; got != rs2[0].Metrics.GeneratedTokens+rs2[1].Metrics.GeneratedTokens {
		t.Errorf("batch metrics %+v", m.Metrics())
	}
	if generated == 0 {
		t.Error("nothing generated")
	}
}

type cliClassify struct {
	Token  int32     `json:"token"`
	Text   string    `json:"text"`
	Logits []float32 `json:"logits"`
	Error  string    `json:"error"`
}

func TestClassifyLogitsEqualTheCLI(t *testing.T) {
	m := shared(t)
	prompts := []string{"Is honesty a virtue? Answer:", "The king said", "HONEST, adj."}
	rs, err := m.Classify(context.Background(), prompts, WithLogits(), WithTopLogprobs(3))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "prompts.jsonl")
	var lines bytes.Buffer
	for _, p := range prompts {
		j, _ := json.Marshal(map[string]string{"prompt": p})
		lines.Write(append(j, '\n'))
	}
	if err := os.WriteFile(in, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, "classify", "--model", tinyEn, "--device", "cpu", "--input", in, "--logits")
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	i := 0
	for ; sc.Scan(); i++ {
		var want cliClassify
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		r := rs[i]
		if r.Err != nil || r.Token.ID != want.Token || r.Token.Text != want.Text {
			t.Errorf("prompt %d: %+v, the CLI's %d %q", i, r.Token, want.Token, want.Text)
		}
		if len(r.Logits) != m.Info().VocabSize || len(r.Logits) != len(want.Logits) {
			t.Fatalf("prompt %d: %d logits, the CLI's %d", i, len(r.Logits), len(want.Logits))
		}
		for k := range r.Logits {
			if r.Logits[k] != want.Logits[k] {
				t.Fatalf("prompt %d logit %d: %v, the CLI's %v", i, k, r.Logits[k], want.Logits[k])
			}
		}
		if len(r.TopLogprobs) != 3 || r.TopLogprobs[0].ID != r.Token.ID || r.PromptTokens == 0 {
			t.Errorf("prompt %d: top %+v, %d prompt tokens", i, r.TopLogprobs, r.PromptTokens)
		}
	}
	if i != len(prompts) {
		t.Fatalf("the CLI printed %d lines", i)
	}
	// Without WithLogits no row comes back.
	rs, err = m.Classify(context.Background(), prompts[:1])
	if err != nil || rs[0].Logits != nil || rs[0].Token.ID != want0(t, out) {
		t.Errorf("without logits: %+v %v", rs[0], err)
	}
}

func want0(t *testing.T, out []byte) int32 {
	var w cliClassify
	if err := json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &w); err != nil {
		t.Fatal(err)
	}
	return w.Token
}

func TestChatUsesTheModelsTemplate(t *testing.T) {
	m := shared(t)
	msgs := []Message{{"system", "Answer briefly."}, {"user", "What is wisdom?"}}
	s := m.ChatStream(context.Background(), msgs, WithTemperature(0), WithMaxTokens(12))
	toks, err := collectStream(s)
	if err != nil {
		t.Fatal(err)
	}
	// The prompt is the template's rendering (`tessera chat-template`), tokenized as it stands.
	file := filepath.Join(t.TempDir(), "messages.json")
	j, _ := json.Marshal([]map[string]string{{"role": "system", "content": msgs[0].Content},
		{"role": "user", "content": msgs[1].Content}})
	if err := os.WriteFile(file, j, 0o644); err != nil {
		t.Fatal(err)
	}
	rendered := string(runCLI(t, "chat-template", "--model", tinyEn, "--messages", file))
	if !strings.Contains(rendered, "Answer briefly.") || strings.Contains(rendered, "[System:") {
		t.Fatalf("rendered: %q", rendered)
	}
	ids, err := m.Tokenize(rendered, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Result().Metrics.PromptTokens != len(ids) {
		t.Errorf("chat prompt %d tokens, the template's %d", s.Result().Metrics.PromptTokens, len(ids))
	}
	same, err := collectStream(m.Stream(context.Background(), Prompt{IDs: ids}, WithTemperature(0),
		WithMaxTokens(12)))
	if err != nil || fmt.Sprint(same) != fmt.Sprint(toks) {
		t.Errorf("chat %v, the rendered prompt %v (%v)", toks, same, err)
	}
}

func TestInfoMetricsAndStats(t *testing.T) {
	m := shared(t)
	i := m.Info()
	if i.Architecture != "Gemma3ForCausalLM" || i.VocabSize != 4096 || i.NumLayers != 6 ||
		i.HiddenSize != 384 || i.ContextLength != 256 || i.QuantBits != 0 || i.QuantGroup != 0 ||
		!i.HasTokenizer || !i.HasChatTemplate || len(i.EOSTokenIDs) < 2 || !strings.HasPrefix(i.Device, "cpu") {
		t.Errorf("info: %+v", i)
	}
	s := m.Stream(context.Background(), Prompt{Text: kingPrompt}, WithTemperature(0),
		WithMaxTokens(10), WithIgnoreEOS())
	if _, err := collectStream(s); err != nil {
		t.Fatal(err)
	}
	r := s.Result()
	mt := r.Metrics
	if len(r.IDs) != 10 || mt.GeneratedTokens != 10 || mt.PromptTokens == 0 ||
		mt.TotalDuration <= 0 || mt.TimeToFirstToken <= 0 || mt.DecodeTokensPerSec <= 0 ||
		mt.PeakMemoryBytes == 0 || mt.PeakMemoryBytes < mt.ActiveMemoryBytes || r.FinishReason != "length" {
		t.Errorf("result %+v", r)
	}
	st, err := m.Stats()
	if err != nil || st.KVBlocksTotal == 0 || st.KVBlockSize != 16 || st.MemoryPeak == 0 || st.Steps == 0 {
		t.Errorf("stats %+v %v", st, err)
	}
	if v := Version(); !strings.HasPrefix(v, "0.") {
		t.Errorf("version %q", v)
	}
	q := loadTiny(t, WithQuantize(4))
	if q.Info().QuantBits != 4 || q.Info().QuantGroup != 64 {
		t.Errorf("quantized info: %+v", q.Info())
	}
}

func isStatus(err error, s Status) bool {
	e, ok := err.(*Error)
	return ok && e.Status == s
}
