package toolargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/specgate/specgate/pkg/rpcmsg"
)

// Keys are the keys of a call's arguments as a transport's reading of the
// message found and checked them.
type Keys struct{ Keys []string }

// Error is arguments a tool refuses; Msg names the argument and what it
// must be, or lists the arguments the tool takes.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func fail(format string, a ...any) error { return &Error{Msg: fmt.Sprintf(format, a...)} }

// Decode decodes a call's raw arguments into dst, a pointer to an
// arguments struct: the one decode of a tool call. Every key must be one
// of dst's JSON names exactly (encoding/json alone would also take
// "EndpointID" for endpointId), no key may appear twice at any depth, and
// free-form values keep their numbers as json.Number, so large integers
// reach the upstream exactly. The problem it returns names the argument
// and what it must be, or lists the arguments the tool takes.
// read, when not nil, holds raw's keys as the transport's one reading of
// the message found and checked them (rpcmsg.Read): raw is then not walked
// a second time. The error is an *Error.
func Decode(tool string, raw json.RawMessage, read *Keys, dst any) error {
	if inner, wrapped := rpcmsg.Unwrap(raw); wrapped {
		raw, read = inner, nil // the transport read the wrapper, not these
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		raw, read = []byte("{}"), nil
	} else if t[0] != '{' {
		return fail("arguments must be a JSON object")
	}
	var keys []string
	if read != nil {
		keys = read.Keys
	} else {
		var err error
		if keys, err = rpcmsg.CheckKeys(raw, rpcmsg.LevelArguments); err != nil {
			var kp *rpcmsg.KeyProblem
			if errors.As(err, &kp) {
				return fail("%s", kp.Msg)
			}
			return fail("arguments must be a JSON object")
		}
	}
	names := argNames(dst)
	for _, k := range keys {
		if !slices.Contains(names, k) {
			for _, n := range names {
				if strings.EqualFold(n, k) {
					return fail("unknown argument %s: did you mean %s? %s takes %s", rpcmsg.QuoteKey(k), n, tool, strings.Join(names, ", "))
				}
			}
			return fail("unknown argument %s: %s takes %s", rpcmsg.Clip(k, 64), tool, strings.Join(names, ", "))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := te.Field
		if i := strings.IndexByte(field, '.'); i >= 0 {
			field = field[:i]
		}
		return fail("%s must be %s", rpcmsg.Clip(field, 64), argKind(dst, field))
	}
	return fail("arguments could not be read: %s", rpcmsg.Clip(strings.TrimPrefix(err.Error(), "json: "), 200))
}

// argNames lists the JSON names of an arguments struct, in order.
func argNames(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// argKind says what the named argument must be, in words.
func argKind(dst any, name string) string {
	t := reflect.TypeOf(dst).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != name {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.String:
			return "a string"
		case reflect.Float64, reflect.Int:
			return "a number"
		case reflect.Map:
			if ft.Elem().Kind() == reflect.String {
				return "an object of string values by name"
			}
			return "an object of values by name"
		}
	}
	return "a JSON value of another type"
}
