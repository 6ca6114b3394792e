package search

import (
	"bytes"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
)

// stemsTokenizer is the tokenizer of the text bleve indexes: the words are
// already split, lower-cased and stemmed, separated by single spaces.
// bleve's whitespace tokenizer does the same but reserves room for 1,024
// tokens per field, which dominated the build's allocations.
const stemsTokenizer = "specgate_stems"

type spaceTokenizer struct{}

func (spaceTokenizer) Tokenize(input []byte) analysis.TokenStream {
	n := bytes.Count(input, []byte{' '}) + 1
	toks := make([]analysis.Token, 0, n)
	start := 0
	for i := 0; i <= len(input); i++ {
		if i < len(input) && input[i] != ' ' {
			continue
		}
		if i > start {
			toks = append(toks, analysis.Token{
				Term:     input[start:i],
				Start:    start,
				End:      i,
				Position: len(toks) + 1,
				Type:     analysis.AlphaNumeric,
			})
		}
		start = i + 1
	}
	out := make(analysis.TokenStream, len(toks))
	for i := range toks {
		out[i] = &toks[i]
	}
	return out
}

func init() {
	err := registry.RegisterTokenizer(stemsTokenizer,
		func(map[string]interface{}, *registry.Cache) (analysis.Tokenizer, error) {
			return spaceTokenizer{}, nil
		})
	if err != nil {
		panic(err)
	}
}
