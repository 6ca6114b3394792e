package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// EnvPrefix starts the environment variables that override top-level keys:
// SPECGATE_RATE_LIMIT_INTERVAL=30s sets rate_limit_interval.
const EnvPrefix = "SPECGATE_"

// EnvKeys lists the top-level keys an environment variable may set, each
// with its variable: every key whose value is one scalar (a duration, a
// size, a number, a boolean, a string) and allowed_hosts (comma-separated).
// The sections (specs, upstreams, http, store, ...) have none.
func EnvKeys() map[string]string {
	out := map[string]string{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !envSettable(f.Type) {
			continue
		}
		out[key] = EnvPrefix + strings.ToUpper(key)
	}
	return out
}

func envSettable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return true
}

// ApplyEnv sets the top-level keys that SPECGATE_ variables name, read
// with lookup (os.LookupEnv), over what the file said: the flags, applied
// after it, override both. A value is read as the file's would be ("30s",
// "16KiB", "true"); allowed_hosts takes a comma-separated list. A variable
// set to "" sets nothing. It returns the keys it set, sorted; an error
// names each variable whose value does not read.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) ([]string, error) {
	var set, problems []string
	keys := EnvKeys()
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, key := range names {
		v, ok := lookup(keys[key])
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if strings.ContainsAny(v, "\n\r") {
			problems = append(problems, keys[key]+": a value is one line")
			continue
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Value: strings.TrimSpace(v)}
		if key == "allowed_hosts" {
			val = &yaml.Node{Kind: yaml.SequenceNode}
			for _, h := range strings.Split(v, ",") {
				if h = strings.TrimSpace(h); h != "" {
					val.Content = append(val.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: h})
				}
			}
		}
		doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, val}}
		if err := doc.Decode(c); err != nil {
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
			msg = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(msg), "line 0: "))
			if strings.HasSuffix(msg, "into bool") {
				msg = "write true or false"
			}
			problems = append(problems, fmt.Sprintf("%s (%s): %s", keys[key], key, msg))
			continue
		}
		set = append(set, key)
	}
	if len(problems) > 0 {
		return set, &Error{Problems: problems}
	}
	return set, nil
}
