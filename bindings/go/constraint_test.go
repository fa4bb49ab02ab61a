package tessera

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// Structured output through the Go options: the tiny model is tiny, so only the grammar makes
// its sampled outputs valid.
func TestStructuredOutputOptions(t *testing.T) {
	m := shared(t)
	schema := `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},
		"c":{"enum":["red","blue"]}},"required":["n","c"],"additionalProperties":false}`
	for seed := int64(1); seed <= 3; seed++ {
		s := m.Stream(context.Background(), Prompt{Text: "JSON:"}, WithSeed(seed),
			WithTemperature(1), WithMaxTokens(80), WithJSONSchema(schema))
		if _, err := collectStream(s); err != nil {
			t.Fatal(err)
		}
		r := s.Result()
		var v struct {
			N *int    `json:"n"`
			C *string `json:"c"`
		}
		if r.FinishReason != "stop" || json.Unmarshal([]byte(r.Text), &v) != nil || v.N == nil ||
			*v.N < 0 || *v.N > 99 || v.C == nil || (*v.C != "red" && *v.C != "blue") {
			t.Errorf("seed %d: %q (finish %s) does not satisfy the schema", seed, r.Text,
				r.FinishReason)
		}
	}
	s := m.Stream(context.Background(), Prompt{Text: "Code:"}, WithSeed(4), WithTemperature(1),
		WithRegex(`[A-Z]{3}-\d{2}`), WithMaxTokens(40))
	if _, err := collectStream(s); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Z]{3}-\d{2}$`).MatchString(s.Result().Text) {
		t.Errorf("regex: %q", s.Result().Text)
	}
	s = m.Stream(context.Background(), Prompt{Text: "x"}, WithGrammar(`root ::= "yes" | "no"`),
		WithMaxTokens(40), WithTemperature(1))
	if _, err := collectStream(s); err != nil {
		t.Fatal(err)
	}
	if got := s.Result().Text; got != "yes" && got != "no" {
		t.Errorf("grammar: %q", got)
	}
	s = m.Stream(context.Background(), Prompt{Text: "x"}, WithJSONSchema(`{"type":"strin"}`),
		WithMaxTokens(40))
	_, err := collectStream(s)
	if err == nil || !strings.Contains(err.Error(), "unknown type 'strin'") {
		t.Errorf("a bad schema: %v", err)
	}
}
