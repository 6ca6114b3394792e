package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/config"
)

// The one-shot commands print a tool's answer for a shell, where the
// process ends once it is printed: a responseId would name an answer
// nobody can read any more. So the answer is read back here, while the
// process lives, and what a responseId was for is done by flags.

// cliAnswers is a one-shot command's answer store: it remembers whose each
// answer it stored is, so that the command can read one back whole after
// the tool answered. Safe for concurrent use.
type cliAnswers struct {
	answer.AnswerStore
	mu    sync.Mutex
	owner map[string]string // responseId -> principal
}

func (s *cliAnswers) Put(ctx context.Context, principal string, a *answer.Answer) (string, error) {
	id, err := s.AnswerStore.Put(ctx, principal, a)
	if err == nil {
		s.mu.Lock()
		s.owner[id] = principal
		s.mu.Unlock()
	}
	return id, err
}

// read returns the answer stored as id, or nil.
func (s *cliAnswers) read(ctx context.Context, id string) *answer.Answer {
	s.mu.Lock()
	principal, ok := s.owner[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	a, err := s.AnswerStore.Get(ctx, principal, id)
	if err != nil {
		return nil
	}
	return a
}

// answerStore is the store start hands the governed call: for a command
// that reads its answers back (c.keepAnswers), one that remembers them.
func (c *common) answerStore(s answer.AnswerStore) answer.AnswerStore {
	if !c.keepAnswers || s == nil {
		return s
	}
	c.answers = &cliAnswers{AnswerStore: s, owner: map[string]string{}}
	return c.answers
}

// answerPrinter prints an invoke or run_script answer on the command line.
type answerPrinter struct {
	c   *common
	cfg *config.Config
}

// stored is the answer a result's responseId names, or nil.
func (p answerPrinter) stored(ctx context.Context, o jsonObject) *answer.Answer {
	var id string
	if json.Unmarshal(o.get("responseId"), &id) != nil || id == "" || p.c.answers == nil {
		return nil
	}
	return p.c.answers.read(ctx, id)
}

// invoke prints an invoke answer without its responseId: a nextPageOf
// becomes the parameters it stands for, and a preview's hint names the
// flags that show the rest.
func (p answerPrinter) invoke(ctx context.Context, out json.RawMessage) error {
	o, ok := parseObject(out)
	if !ok {
		return printJSON(p.c.stdout, out)
	}
	a := p.stored(ctx, o)
	o.del("responseId")
	var next struct {
		Of string `json:"nextPageOf"`
	}
	if np := o.get("nextPage"); np != nil && json.Unmarshal(np, &next) == nil && next.Of != "" {
		if a != nil && a.NextPage != nil {
			data, err := json.Marshal(answer.NextPageRef{Parameters: a.NextPage})
			if err != nil {
				return err
			}
			o.set("nextPage", data)
		} else {
			o.del("nextPage")
		}
	}
	p.rewriteHint(&o, invokeHint)
	return printJSON(p.c.stdout, o.marshal())
}

// script prints a run_script answer without its responseId.
func (p answerPrinter) script(out json.RawMessage) error {
	o, ok := parseObject(out)
	if !ok {
		return printJSON(p.c.stdout, out)
	}
	o.del("responseId")
	p.rewriteHint(&o, scriptHint)
	return printJSON(p.c.stdout, o.marshal())
}

// rewriteHint replaces a hint that names read_response: with the preview's
// hint for the command line, or none.
func (p answerPrinter) rewriteHint(o *jsonObject, cli func(answer.Shaped, string) string) {
	var hint string
	_ = json.Unmarshal(o.get("hint"), &hint)
	var shaped answer.Shaped
	if s := o.get("shaped"); s != nil && json.Unmarshal(s, &shaped) == nil {
		data, _ := json.Marshal(cli(shaped, hint))
		o.set("hint", data)
		return
	}
	if strings.Contains(hint, "read_response") || strings.Contains(hint, "responseId") {
		o.del("hint")
	}
}

var hintJQ = regexp.MustCompile(`"jq":("(?:[^"\\]|\\.)*")`)

// invokeHint is a preview's hint on the command line: the jq the tool
// proposed, as a --jq flag.
func invokeHint(s answer.Shaped, toolHint string) string {
	var b strings.Builder
	if s.Items > 0 {
		fmt.Fprintf(&b, "The body is a preview of %d items (%d shown, %d bytes in all): ", s.Items, s.Shown, s.Bytes)
	} else {
		fmt.Fprintf(&b, "The body is a preview (%d bytes in all): ", s.Bytes)
	}
	b.WriteString("--raw prints it whole; --jq FILTER keeps what you need")
	if m := hintJQ.FindStringSubmatch(toolHint); m != nil {
		if jq, err := strconv.Unquote(m[1]); err == nil && jq != ".field" && !strings.Contains(jq, "'") {
			b.WriteString(", such as --jq '" + jq + "'")
		}
	}
	fmt.Fprintf(&b, "; --max-bytes %d shows more.", answer.MaxResultBytes)
	return b.String()
}

func scriptHint(s answer.Shaped, _ string) string {
	return fmt.Sprintf("The result is a preview (%d bytes in all): return less from the script (the fields or items you need), or give --max-bytes %d to show more.",
		s.Bytes, answer.MaxResultBytes)
}

// raw prints the body alone: the stored answer's bytes as the upstream
// sent them, or with jq the filter's result over the whole body.
func (p answerPrinter) raw(ctx context.Context, out json.RawMessage, jq string) error {
	o, ok := parseObject(out)
	if !ok {
		return printJSON(p.c.stdout, out)
	}
	a := p.stored(ctx, o)
	if a != nil && a.Truncated {
		fmt.Fprintf(p.c.stderr, "specgate invoke: the body was cut at %d bytes (max_response_bytes)\n", len(a.Body))
	}
	var jqErr string
	if json.Unmarshal(o.get("jqError"), &jqErr) == nil && jqErr != "" {
		fmt.Fprintf(p.c.stderr, "specgate invoke: --jq failed after the call went out: %s\n", jqErr)
		return exitError{code: exitOther}
	}
	shaped := o.get("shaped") != nil
	switch {
	case a != nil && jq == "":
		_, err := p.c.stdout.Write(a.Body)
		return err
	case a != nil && shaped:
		// the tool's answer holds a preview of the filter's result: run it
		// again over the whole body, bounded as the wire read was
		res, err := p.runJQ(ctx, a, jq)
		if err != nil {
			fmt.Fprintf(p.c.stderr, "specgate invoke: --jq: %v\n", err)
			return exitError{code: exitOther}
		}
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return printRawValue(p.c.stdout, data)
	case shaped:
		fmt.Fprintln(p.c.stderr, "specgate invoke: the answer is larger than response_store_bytes and was not kept whole: this is its preview")
	}
	return printRawValue(p.c.stdout, o.get("body"))
}

func (p answerPrinter) runJQ(ctx context.Context, a *answer.Answer, src string) (any, error) {
	q, err := answer.CompileJQ(src)
	if err != nil {
		return nil, err
	}
	v, err := answer.DecodeJSON(a.Body)
	if err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	return q.Run(ctx, v, answer.JQLimits{Timeout: time.Duration(p.cfg.JQTimeout), MaxBytes: int(p.cfg.MaxResponseBytes)})
}

// printRawValue prints a JSON string as its text, anything else as
// indented JSON.
func printRawValue(w io.Writer, v json.RawMessage) error {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		_, err := w.Write([]byte(s))
		return err
	}
	if len(v) == 0 {
		return nil
	}
	return printJSON(w, v)
}

// jsonObject is a JSON object's members in the order written, each value
// as its raw text, so that an answer is printed in the tool's order with
// its numbers exact.
type jsonObject []jsonField

type jsonField struct {
	key string
	val json.RawMessage
}

func parseObject(raw []byte) (jsonObject, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var o jsonObject
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		o = append(o, jsonField{key, v})
	}
	return o, true
}

func (o jsonObject) get(key string) json.RawMessage {
	for _, f := range o {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

func (o *jsonObject) set(key string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, jsonField{key, v})
}

func (o *jsonObject) del(key string) {
	for i := range *o {
		if (*o)[i].key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

func (o jsonObject) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}
