package search

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

func petsCatalog(t *testing.T) *spec.Catalog {
	t.Helper()
	s, err := spec.Parse(t.Context(), "pets.json", []byte(petsSpec), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// refusingEmbedder is an embeddings endpoint that never answers.
type refusingEmbedder struct{}

func (refusingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("connection refused")
}

func TestBuildStaysLexicalWhenEmbeddingsFail(t *testing.T) {
	cat := petsCatalog(t)
	var logs bytes.Buffer
	ix, err := Build(t.Context(), cat, Options{}, &SemanticOptions{Embedder: refusingEmbedder{}, Model: "m", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Len() != cat.Len() {
		t.Errorf("index holds %d endpoints, want %d", ix.Len(), cat.Len())
	}
	if hits, err := ix.Search("pull requests", 3); err != nil || len(hits) == 0 {
		t.Errorf("Search = %v, %v", hits, err)
	}
	if !strings.Contains(logs.String(), "semantic search off") {
		t.Errorf("log lacks the fallback:\n%s", logs.String())
	}
}

func TestBuildWithoutSemantic(t *testing.T) {
	cat := petsCatalog(t)
	ix, err := Build(t.Context(), cat, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Semantic() != nil {
		t.Error("semantic search on without options")
	}
}
