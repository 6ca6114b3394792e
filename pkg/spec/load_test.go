package spec

import (
	"errors"
	"testing"
)

// TestJSONErrorTextKeepsWordsWithBis: only kin-openapi's internal "…Bis"
// type names are cleaned from messages, not any word holding "Bis".
func TestJSONErrorTextKeepsWordsWithBis(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			"kin type name",
			"json: unknown field in Go struct SchemaBis.properties",
			"json: unknown field in Schema.properties",
		},
		{
			"kin root type",
			"decoding TBis: bad paths",
			"decoding T: bad paths",
		},
		{
			"ordinary words",
			"parameter Bisection of Bismuth is invalid in BisonBis",
			"parameter Bisection of Bismuth is invalid in BisonBis",
		},
		{
			"both",
			"ParameterBis.name: Bismarck",
			"Parameter.name: Bismarck",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonErrorText(errors.New(tt.in)); got != tt.want {
				t.Errorf("jsonErrorText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
