package rpcmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// Two readers of one JSON-RPC message must never disagree about what it
// says. encoding/json keeps the last of two duplicate keys and matches
// struct fields without case, while a map keeps keys with case: a message
// with {"endpointId": A, "EndpointID": B} was read as A by one reader and B
// by another, and a read-only token ran a POST that way. So a message
// whose envelope, params or arguments hold a duplicate key, two keys that
// differ only in case, or a known key spelled in another case, is refused
// whole before any reader acts on it. What mcp-go decodes into its own
// structs at any depth (a client's answer, inputResponses, _meta) is read
// without case too: there two keys that differ only in case are refused
// at every depth ({"action": "decline", "Action": "accept"} was read as an
// accept and the write was sent).

// Level is where an object sits in a JSON-RPC message.
type Level int

const (
	LevelOther     Level = iota // deeper values: only exact duplicates are refused
	LevelEnvelope               // the message itself
	LevelParams                 // params of a request
	LevelArguments              // params.arguments of a tools/call
	LevelDecoded                // deeper in what mcp-go decodes: a client's answer, params but arguments
)

// canonical lists the keys mcp-go reads at a level, each in its only
// accepted spelling.
var canonical = map[Level][]string{
	LevelEnvelope: {"jsonrpc", "id", "method", "params", "result", "error"},
	LevelParams:   {"name", "arguments", "_meta", "task", "inputResponses", "requestState"},
}

// KeyProblem is a message's key that two readers could read differently.
type KeyProblem struct {
	// Level is where the key sits.
	Level Level
	// Msg says what is wrong, naming the key (clipped).
	Msg string
}

func (p *KeyProblem) Error() string { return p.Msg }

// ErrNotJSON is a message that is not one JSON value.
var ErrNotJSON = errors.New("the message is not valid JSON")

// CheckKeys walks one JSON value whose outermost object sits at top and
// returns the first key problem, ErrNotJSON, or nil, with the keys of the
// outermost object. Read does this for a whole message; CheckKeys is for
// arguments that reach a tool without one (an in-process call).
func CheckKeys(msg []byte, top Level) ([]string, error) {
	w := walker{dec: json.NewDecoder(bytes.NewReader(msg)), msg: msg}
	w.dec.UseNumber()
	var keys []string
	if err := w.all(top, &keys); err != nil {
		return nil, err
	}
	return keys, nil
}

// walker is one pass over a message's tokens: it records the first key
// problem and goes on, so that a refusal can still name the message's id.
type walker struct {
	dec     *json.Decoder
	msg     []byte
	problem *KeyProblem
	// m, when set, gets what the walk finds of a message (Read).
	m *Message
	// inArgs is set while the walk is inside params.arguments, where every
	// number is checked against float64's range.
	inArgs bool
}

// walk walks one value at lvl and returns its first token (the value
// itself when it is not an object or array); keys, when not nil, gets the
// keys of the value when it is an object.
func (w *walker) walk(lvl Level, keys *[]string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, ErrNotJSON
	}
	d, ok := tok.(json.Delim)
	if !ok {
		if n, isNum := tok.(json.Number); isNum && w.inArgs && !w.m.OutOfRange {
			// encoding/json refuses, into any, only a number float64
			// cannot hold: that is the whole of what mcp-go cannot read.
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				w.m.OutOfRange = true
			}
		}
		return tok, nil
	}
	if d == '[' {
		for w.dec.More() {
			if _, err := w.walk(LevelOther, nil); err != nil {
				return nil, err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return nil, ErrNotJSON
		}
		return tok, nil
	}
	seen := map[string]bool{}
	folded := map[string]string{}
	for w.dec.More() {
		kt, err := w.dec.Token()
		if err != nil {
			return nil, ErrNotJSON
		}
		key, ok := kt.(string)
		if !ok {
			return nil, ErrNotJSON
		}
		w.checkKey(key, lvl, seen, folded)
		if keys != nil {
			*keys = append(*keys, key)
		}
		if err := w.member(lvl, key); err != nil {
			return nil, err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return nil, ErrNotJSON
	}
	return tok, nil
}

// member walks the value of key in an object at lvl and, when the walk
// reads a message, keeps what Message holds of it.
func (w *walker) member(lvl Level, key string) error {
	child := childLevel(lvl, key)
	if w.m == nil || (lvl != LevelEnvelope && lvl != LevelParams) {
		_, err := w.walk(child, nil)
		return err
	}
	m := w.m
	var childKeys *[]string
	switch {
	case lvl == LevelEnvelope && strings.EqualFold(key, "params"):
		m.resetParams() // of two params, encoding/json keeps the last
	case lvl == LevelParams && strings.EqualFold(key, "arguments"):
		m.ArgumentKeys, m.OutOfRange = nil, false
		childKeys = &m.ArgumentKeys
		w.inArgs = true
		defer func() { w.inArgs = false }()
	}
	start := w.dec.InputOffset()
	first, err := w.walk(child, childKeys)
	if err != nil {
		return err
	}
	end := w.dec.InputOffset()
	raw := w.msg[start:end]
	for len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t' || raw[0] == '\r' || raw[0] == '\n' || raw[0] == ':') {
		raw, start = raw[1:], start+1
	}
	// Keys match as encoding/json matches them to struct fields, without
	// case, the last one kept: the fields are read as mcp-go reads them.
	str, _ := first.(string)
	is := func(name string) bool { return strings.EqualFold(key, name) }
	switch {
	case lvl == LevelEnvelope && is("id"):
		m.ID = raw
	case lvl == LevelEnvelope && is("method"):
		m.Method = str
	case lvl == LevelParams && is("name"):
		m.Name = str
	case lvl == LevelParams && is("arguments"):
		m.Arguments, m.argStart, m.argEnd = raw, int(start), int(end)
	case lvl == LevelParams && is("task"):
		m.Task = raw
	case lvl == LevelParams && is("taskId"):
		m.TaskID = str
	case lvl == LevelParams && is("requestId"):
		m.RequestID = raw
	case lvl == LevelParams && is("_meta"):
		m.Meta = raw
	}
	return nil
}

// all walks the whole input as one value at top: the first key problem
// (even when the text goes on to be invalid, as a walk that stopped at the
// problem would have answered), else ErrNotJSON, or nil.
func (w *walker) all(top Level, keys *[]string) error {
	_, err := w.walk(top, keys)
	if err == nil {
		if _, end := w.dec.Token(); end != io.EOF {
			err = ErrNotJSON
		}
	}
	if w.problem != nil {
		return w.problem
	}
	return err
}

// checkKey records the first problem of key among its object's keys.
func (w *walker) checkKey(key string, lvl Level, seen map[string]bool, folded map[string]string) {
	if w.problem != nil {
		return
	}
	if seen[key] {
		w.problem = &KeyProblem{lvl, "the key " + QuoteKey(key) + " appears twice" + where(lvl)}
		return
	}
	seen[key] = true
	if lvl == LevelOther {
		return
	}
	lower := foldKey(key)
	if prev, ok := folded[lower]; ok {
		w.problem = &KeyProblem{lvl, "the keys " + QuoteKey(prev) + " and " + QuoteKey(key) + " differ only in case" + where(lvl)}
		return
	}
	folded[lower] = key
	for _, c := range canonical[lvl] {
		if key != c && strings.EqualFold(key, c) {
			w.problem = &KeyProblem{lvl, "the key " + QuoteKey(key) + " must be written " + QuoteKey(c) + where(lvl)}
			return
		}
	}
}

// childLevel is the level of the value of key in an object at lvl.
// Keys match without case, as encoding/json matches struct fields: a
// message whose key is spelled in another case already has its problem,
// and its values are still read where mcp-go reads them.
func childLevel(lvl Level, key string) Level {
	switch {
	case lvl == LevelEnvelope && strings.EqualFold(key, "params"):
		return LevelParams
	case lvl == LevelEnvelope && (strings.EqualFold(key, "result") || strings.EqualFold(key, "error")):
		return LevelDecoded
	case lvl == LevelParams && strings.EqualFold(key, "arguments"):
		return LevelArguments
	case lvl == LevelParams, lvl == LevelDecoded:
		return LevelDecoded
	}
	return LevelOther
}

func where(lvl Level) string {
	switch lvl {
	case LevelEnvelope:
		return " in the message"
	case LevelParams:
		return " in params"
	case LevelArguments:
		return " in arguments"
	}
	return " in a nested object"
}

// QuoteKey quotes a key for a message, clipped: a key can be as long as
// the body.
func QuoteKey(k string) string {
	if len(k) > 64 {
		k = Clip(k, 64)
	}
	b, _ := json.Marshal(k)
	return string(b)
}

// foldKey is the form two keys share exactly when strings.EqualFold (and
// encoding/json's field matching) takes them for one: each rune is the
// smallest of its case-folding orbit, so "ſ" (long s) and the Kelvin sign
// fold with "s" and "k", which strings.ToLower leaves apart.
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, k)
}
