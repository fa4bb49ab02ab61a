package tessera

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Embed equals `tessera embed` on the same prompts (mean pooling, 24 dimensions), each vector
// of unit norm; a prompt's failure stays its own; dimensions beyond the model's fail the call.
func TestEmbedEqualsTheCLI(t *testing.T) {
	m := shared(t)
	prompts := []string{"Is honesty a virtue?", "The king said unto them"}
	rs, err := m.Embed(context.Background(), prompts, WithPooling(PoolingMean), WithDimensions(24))
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
	out := runCLI(t, "embed", "--model", tinyEn, "--device", "cpu", "--input", in, "--pooling", "mean",
		"--dimensions", "24")
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	i := 0
	for ; sc.Scan(); i++ {
		var want struct {
			Embedding    []float32 `json:"embedding"`
			PromptTokens int       `json:"prompt_tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		r := rs[i]
		if r.Err != nil || len(r.Embedding) != 24 || r.PromptTokens != want.PromptTokens {
			t.Fatalf("prompt %d: %v, %d values, %d tokens (the CLI's %d)", i, r.Err, len(r.Embedding),
				r.PromptTokens, want.PromptTokens)
		}
		var ss float64
		for k, v := range r.Embedding {
			ss += float64(v) * float64(v)
			if math.Abs(float64(v-want.Embedding[k])) > 1e-6 {
				t.Errorf("prompt %d value %d: %g, the CLI's %g", i, k, v, want.Embedding[k])
			}
		}
		if math.Abs(math.Sqrt(ss)-1) > 1e-5 {
			t.Errorf("prompt %d: norm %g", i, math.Sqrt(ss))
		}
	}
	if i != len(prompts) {
		t.Fatalf("the CLI printed %d lines", i)
	}
}

func TestEmbedErrors(t *testing.T) {
	m := shared(t)
	rs, err := m.EmbedPrompts(context.Background(), []Prompt{{IDs: []int32{2, 99999999}}, {Text: "fine"}})
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if !errors.As(rs[0].Err, &e) || e.Status != StatusInvalidArgument || rs[0].Embedding != nil {
		t.Errorf("a bad prompt: %v", rs[0].Err)
	}
	if rs[1].Err != nil || len(rs[1].Embedding) != m.EmbeddingSize() {
		t.Errorf("the good prompt: %v, %d values (size %d)", rs[1].Err, len(rs[1].Embedding), m.EmbeddingSize())
	}
	_, err = m.Embed(context.Background(), []string{"x"}, WithPromptName("query"))
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument || !strings.Contains(e.Message, "prompt 'query'") {
		t.Errorf("a prompt the model does not define: %v", err)
	}
	_, err = m.Embed(context.Background(), []string{"x"}, WithDimensions(m.EmbeddingSize()+1))
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument || !strings.Contains(e.Message, "dimensions") {
		t.Errorf("dimensions beyond the size: %v", err)
	}
}
