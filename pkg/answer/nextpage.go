package answer

// NextPageRef is how an answer names its next page: by the parameters
// themselves, or by the stored answer that holds them.
type NextPageRef struct {
	// Parameters are the exact parameters to pass to invoke for the next
	// page.
	Parameters map[string]any `json:"parameters,omitempty"`
	// Of, set instead of Parameters when those would take more than a
	// quarter of the answer budget (an upstream's cursor can be megabytes),
	// is the responseId to pass to invoke as nextPageOf.
	Of string `json:"nextPageOf,omitempty"`
}

// NextPageFor says next, the next-page parameters of the answer stored as
// responseID ("" when it was not stored), within an answer of budget bytes:
// the parameters while their JSON takes at most a quarter of the budget and
// nests at most MaxAnswerDepth levels, else the stored answer's id. It
// returns nil when there is no next page, or when the parameters do not fit
// and the answer was not stored, so nothing can name them.
func NextPageFor(next map[string]any, responseID string, budget int) *NextPageRef {
	if next == nil {
		return nil
	}
	if budget <= 0 {
		budget = DefaultResultBytes
	}
	if n, _ := jsonSize(next, budget/4); n <= budget/4 && !deeperThan(next, MaxAnswerDepth) {
		return &NextPageRef{Parameters: next}
	}
	if responseID == "" {
		return nil
	}
	return &NextPageRef{Of: responseID}
}
