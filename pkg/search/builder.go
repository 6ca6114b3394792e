package search

import (
	"context"
	"fmt"
	"time"

	"github.com/specgate/specgate/pkg/spec"
)

// Build indexes cat as New does and, when semantic is not nil, embeds its
// endpoints for semantic search too. An embeddings endpoint that does not
// answer leaves the index searching lexically until it does: that is
// logged to semantic.Logger, never an error.
func Build(ctx context.Context, cat *spec.Catalog, opts Options, semantic *SemanticOptions) (*Index, error) {
	ix, err := New(cat, opts)
	if err != nil {
		return nil, fmt.Errorf("building the search index: %w", err)
	}
	if semantic == nil {
		return ix, nil
	}
	start := time.Now()
	log := semantic.Logger
	if err := ix.EnableSemantic(ctx, cat, *semantic); err != nil {
		if log != nil {
			log.Warn("semantic search off until the embeddings endpoint answers; searching lexically", "model", semantic.Model, "reason", err.Error())
		}
		return ix, nil
	}
	if log != nil {
		st := ix.Semantic()
		log.Info("semantic search on", "model", semantic.Model, "endpoints", st.Endpoints, "dimensions", st.Dimensions,
			"cached", st.Cached, "took", time.Since(start).Round(time.Millisecond))
	}
	return ix, nil
}
