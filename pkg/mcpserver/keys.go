package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

// level is where an object sits in a JSON-RPC message.
type level int

const (
	levelOther     level = iota // deeper values: only exact duplicates are refused
	levelEnvelope               // the message itself
	levelParams                 // params of a request
	levelArguments              // params.arguments of a tools/call
	levelDecoded                // deeper in what mcp-go decodes: a client's answer, params but arguments
)

// canonical lists the keys mcp-go reads at a level, each in its only
// accepted spelling.
var canonical = map[level][]string{
	levelEnvelope: {"jsonrpc", "id", "method", "params", "result", "error"},
	levelParams:   {"name", "arguments", "_meta", "task", "inputResponses", "requestState"},
}

// keyProblem is a message's key that two readers could read differently.
type keyProblem struct {
	lvl level
	msg string
}

func (p *keyProblem) Error() string { return p.msg }

// errNotJSON is a message that is not one JSON value.
var errNotJSON = errors.New("the message is not valid JSON")

// checkKeys walks one JSON value whose outermost object sits at top and
// returns the first key problem, errNotJSON, or nil, with the keys of the
// outermost object.
func checkKeys(msg []byte, top level) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var keys []string
	if err := walkKeys(dec, top, &keys); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotJSON
	}
	return keys, nil
}

// walkKeys walks one value at lvl; keys, when not nil, gets the keys of
// the value when it is an object.
func walkKeys(dec *json.Decoder, lvl level, keys *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return errNotJSON
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if d == '[' {
		for dec.More() {
			if err := walkKeys(dec, levelOther, nil); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		if err != nil {
			return errNotJSON
		}
		return nil
	}
	seen := map[string]bool{}
	folded := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errNotJSON
		}
		key, ok := tok.(string)
		if !ok {
			return errNotJSON
		}
		if seen[key] {
			return &keyProblem{lvl, "the key " + quoteKey(key) + " appears twice" + where(lvl)}
		}
		seen[key] = true
		if keys != nil {
			*keys = append(*keys, key)
		}
		if lvl != levelOther {
			lower := foldKey(key)
			if prev, ok := folded[lower]; ok {
				return &keyProblem{lvl, "the keys " + quoteKey(prev) + " and " + quoteKey(key) + " differ only in case" + where(lvl)}
			}
			folded[lower] = key
			for _, c := range canonical[lvl] {
				if key != c && strings.EqualFold(key, c) {
					return &keyProblem{lvl, "the key " + quoteKey(key) + " must be written " + quoteKey(c) + where(lvl)}
				}
			}
		}
		child := levelOther
		switch {
		case lvl == levelEnvelope && key == "params":
			child = levelParams
		case lvl == levelEnvelope && (key == "result" || key == "error"):
			child = levelDecoded
		case lvl == levelParams && key == "arguments":
			child = levelArguments
		case lvl == levelParams, lvl == levelDecoded:
			child = levelDecoded
		}
		if err := walkKeys(dec, child, nil); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return errNotJSON
	}
	return nil
}

func where(lvl level) string {
	switch lvl {
	case levelEnvelope:
		return " in the message"
	case levelParams:
		return " in params"
	case levelArguments:
		return " in arguments"
	}
	return " in a nested object"
}

// quoteKey quotes a key for a message, clipped: a key can be as long as
// the body.
func quoteKey(k string) string {
	b, _ := json.Marshal(clip(k, 64))
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
