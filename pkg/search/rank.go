package search

import (
	"strings"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// stemWord is bleve's English (Porter) stemmer over one lower-case word;
// single letters and stop-like noise give "".
func stemWord(w string) string {
	if len(w) < 2 {
		return ""
	}
	return porterstemmer.StemString(w)
}

// verbByStem finds verbs by stem, so "merged", "removes" and "listing"
// name their action too.
var verbByStem = func() map[string]verb {
	m := make(map[string]verb, len(verbs))
	for w, v := range verbs {
		m[stemWord(w)] = v
	}
	return m
}()

// verbStems holds the stem of every verb and of every word a verb expands
// to: such words in an operation's name say what it does, not what it
// works on, and the action features weigh them.
var verbStems = func() map[string]bool {
	m := map[string]bool{}
	for w, v := range verbs {
		if v.content {
			continue
		}
		m[stemWord(w)] = true
	}
	for _, w := range []string{"list", "get", "create", "update", "delete", "read", "replace", "patch", "watch", "post", "put", "set", "add", "remove", "fetch", "retrieve"} {
		m[stemWord(w)] = true
	}
	return m
}()

// qterm is one stem a query looks for, with the weight of a match.
type qterm struct {
	stem string
	id   int32 // -1 when no endpoint has it
	w    float64
	slot int32 // its column in plan.fields, when id >= 0
}

// concept is one thing the query names: a word and its expansions.
type concept struct {
	terms []qterm
	idf   float64
	// own is set when only what specs say of operations' parts (inOwn)
	// has the word: it counts for little, and not in coverage, so that
	// intents worded in the specs' names rank as they would without it.
	own bool
}

// plan is a query read for ranking.
type plan struct {
	concepts  []concept
	act       action
	plural    bool      // the first resource word after the action is plural
	one       bool      // the intent names one item by its id ("by id")
	asked     int       // content words, those no endpoint has included
	verbTerms []qterm   // words the action goes by in operation names
	known     []int32   // every term id the query names, for coverage of the name
	own       []concept // words only the specs' own words of parts have
	slotIDs   []int32   // term id by column of fields (assignSlots)
	fields    []field   // by entry and column: the entry's bits for the term (lookup)
}

// Expansion weights.
const (
	wSynonym = 0.6
	wAlso    = 0.6
	wAgent   = 0.8 // "contributed" also finds "contributor"
)

// irregularPast maps past forms to the verb they come from, so "messages
// I sent" reads as a qualifier.
var irregularPast = map[string]string{
	"sent": "send", "made": "make", "built": "build", "written": "write",
	"wrote": "write", "given": "give", "gave": "give", "bought": "buy",
	"shown": "show", "seen": "see", "saw": "see", "began": "begin",
	"begun": "begin", "chosen": "choose", "stolen": "steal", "drawn": "draw",
	"taken": "take", "done": "do", "kept": "keep", "paid": "pay",
}

// plan reads free text: phrases rewritten, stop words dropped, the first
// verb taken as the action, the other words as concepts with their
// synonyms.
func (ix *Index) plan(text string) *plan {
	b := planner{ix: ix, p: &plan{}, seen: map[string]int{}}
	for _, w := range ix.compounds(rewritePhrases(splitWords(text, nil))) {
		b.word(w)
	}
	p := b.p
	switch {
	case p.act == actGet && p.plural:
		p.act = actList
	case p.act == actSearch && p.one && !p.plural:
		// "find pet by id": a thing looked up by its id is read, not
		// searched for.
		p.act = actGet
	}
	p.asked = len(p.concepts)
	ix.keepKnown(p)
	p.assignSlots()
	return p
}

// The head noun phrase of a query is the run of resource words after the
// action (or opening a query without one). Its last word says one thing or
// many: "recent CI runs", "a customer's email address".
const (
	headWant = iota // looking for the run
	headIn          // in it
	headDone        // past it
)

// planner reads a query's words one at a time into a plan.
type planner struct {
	ix   *Index
	p    *plan
	seen map[string]int // a concept's index by its first stem
	head int            // where the word is against the head noun phrase
}

// addConcept adds one query concept, its alternative terms, merging it into
// an earlier one for the same word.
func (b *planner) addConcept(terms []qterm) {
	var kept []qterm
	for _, t := range terms {
		if t.stem == "" {
			continue
		}
		if id, ok := b.ix.terms[t.stem]; ok {
			t.id = id
		} else {
			t.id = -1
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		return
	}
	if i, ok := b.seen[kept[0].stem]; ok {
		// The same word twice: keep one concept, with the
		// stronger weights.
		c := &b.p.concepts[i]
		for _, t := range kept {
			merged := false
			for j := range c.terms {
				if c.terms[j].stem == t.stem {
					c.terms[j].w = max(c.terms[j].w, t.w)
					merged = true
				}
			}
			if !merged {
				c.terms = append(c.terms, t)
			}
		}
		return
	}
	b.seen[kept[0].stem] = len(b.p.concepts)
	b.p.concepts = append(b.p.concepts, concept{terms: kept})
}

// word reads one word of the query: an action, a stop word, or a content
// word with its abbreviation, synonyms and agent nouns.
func (b *planner) word(w string) {
	if w == oneItem {
		b.p.one = true
		if b.head == headIn {
			b.head = headDone
		}
		return
	}
	st := stemWord(w)
	past := false
	v, isVerb := verbs[w]
	if !isVerb {
		if base, ok := irregularPast[w]; ok {
			v, isVerb = verbs[base]
			st = stemWord(base)
			past = true
		} else if strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing") {
			// "merged", "listing"; not "followers" or "runs", nouns
			// whose stem is a verb.
			v, isVerb = verbByStem[st]
			past = strings.HasSuffix(w, "ed")
		}
	}
	if isVerb && past && b.p.act == actNone && len(b.p.concepts) > 0 {
		// A participle after the thing named qualifies it ("messages
		// I sent", "repos I starred"): the intent is to read them,
		// not to do it again. A domain verb stays a content word.
		if !v.content {
			if b.head == headIn {
				b.head = headDone
			}
			return
		}
		isVerb = false
	}
	if isVerb && v.act != actNone {
		switch {
		case b.p.act == actNone:
			b.p.act = v.act
			b.head = headWant
		case b.p.act == actGet && v.act == actList:
			// "show all branches"
			b.p.act = actList
		case (b.p.act == actCreate || b.p.act == actUpdate) && v.act == actDo:
			// "give a review that approves": the domain verb
			// says more than the generic one.
			b.p.act = actDo
		}
		b.p.verbTerms = append(b.p.verbTerms, b.ix.qterm(st, 1))
		for _, a := range v.also {
			b.p.verbTerms = append(b.p.verbTerms, b.ix.qterm(stemWord(a), wAlso))
		}
		if !v.content && !v.weak {
			if b.head == headIn {
				b.head = headDone
			}
			return
		}
	}
	if stopWords[w] || st == "" {
		if b.head == headIn && stopWords[w] {
			b.head = headDone
		}
		return
	}
	if b.head != headDone {
		b.head = headIn
		b.p.plural = strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && st != w
	}
	weight := 1.0
	if isVerb && v.weak {
		weight = 0.3
	}
	terms := []qterm{{stem: st, w: weight}}
	if a, ok := abbrev[w]; ok {
		terms = append(terms, qterm{stem: stemWord(a), w: weight})
	}
	if isVerb {
		for _, a := range v.also {
			terms = append(terms, qterm{stem: stemWord(a), w: wAlso})
		}
	}
	for _, s := range synonyms[w] {
		for _, sw := range splitWords(s, nil) {
			terms = append(terms, qterm{stem: stemWord(sw), w: wSynonym})
		}
	}
	if st != w && (strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing")) {
		// "who contributed", "who is watching": the people who do
		// it are the contributors and watchers.
		for _, suf := range []string{"or", "er"} {
			if _, ok := b.ix.terms[st+suf]; ok {
				terms = append(terms, qterm{stem: st + suf, w: wAgent})
			}
		}
	}
	b.addConcept(terms)
}

// keepKnown drops the concepts no endpoint knows (they cannot rank
// anything and would dilute coverage), keeps those only own words match
// apart, and lists the known term ids.
func (ix *Index) keepKnown(p *plan) {
	// A concept no endpoint knows cannot rank anything; drop it so it
	// does not dilute coverage.
	kept := p.concepts[:0]
	var own []concept
	for _, c := range p.concepts {
		ownIDF := 0.0
		for i, t := range c.terms {
			if t.id >= 0 && ix.ownOnly[t.id] {
				// Not a word of names, summaries or descriptions.
				ownIDF = max(ownIDF, ix.idf[t.id]*t.w)
				c.terms[i].id = -1
				continue
			}
			if t.id >= 0 {
				c.idf = max(c.idf, ix.idf[t.id]*t.w)
				p.known = append(p.known, t.id)
			}
		}
		switch {
		case c.idf > 0:
			kept = append(kept, c)
		case ownIDF > 0:
			// Restore the own-only terms: own words alone match it.
			oc := concept{idf: ownIDF, own: true}
			for _, t := range c.terms {
				if id, ok := ix.terms[t.stem]; ok && ix.ownOnly[id] {
					t.id = id
					oc.terms = append(oc.terms, t)
				}
			}
			own = append(own, oc)
		}
	}
	p.own = own
	p.concepts = kept
	for _, t := range p.verbTerms {
		if t.id >= 0 {
			p.known = append(p.known, t.id)
		}
	}
}

// assignSlots gives every term id the plan looks up a column of fields.
func (p *plan) assignSlots() {
	slots := map[int32]int32{}
	assign := func(ts []qterm) {
		for i := range ts {
			if ts[i].id < 0 {
				continue
			}
			s, ok := slots[ts[i].id]
			if !ok {
				s = int32(len(p.slotIDs))
				slots[ts[i].id] = s
				p.slotIDs = append(p.slotIDs, ts[i].id)
			}
			ts[i].slot = s
		}
	}
	for i := range p.concepts {
		assign(p.concepts[i].terms)
	}
	for i := range p.own {
		assign(p.own[i].terms)
	}
	assign(p.verbTerms)
}

// lookup fills the plan's fields table from the index's postings: the
// re-ranker then reads an entry's bits for a query term by index, not
// from the entry's map, for every candidate and term.
func (p *plan) lookup(ix *Index) {
	k := len(p.slotIDs)
	p.fields = make([]field, len(ix.entries)*k)
	for s, id := range p.slotIDs {
		for _, ps := range ix.post[id] {
			p.fields[int(ps.n)*k+s] = ps.f
		}
	}
}

// fieldsOf is the field bits entry n has term t in.
func (p *plan) fieldsOf(n int, t qterm) field {
	return p.fields[n*len(p.slotIDs)+int(t.slot)]
}

// compounds reads query words the way the index split the spec's: a word
// no endpoint has is split into two that endpoints do have ("pullrequest"
// into pull request), and two adjacent words are joined when only the
// joined form is known ("star gazers" into stargazers).
func (ix *Index) compounds(words []string) []string {
	known := func(w string) bool {
		st := stemWord(w)
		id, ok := ix.terms[st]
		return st != "" && ok && !ix.ownOnly[id]
	}
	out := make([]string, 0, len(words))
	for i := 0; i < len(words); i++ {
		w := words[i]
		if stopWords[w] || known(w) {
			out = append(out, w)
			continue
		}
		if i+1 < len(words) && !stopWords[words[i+1]] && known(w+words[i+1]) {
			out = append(out, w+words[i+1])
			i++
			continue
		}
		if i > 0 && len(out) > 0 && !stopWords[out[len(out)-1]] && known(out[len(out)-1]+w) {
			out[len(out)-1] += w
			continue
		}
		best := 0
		for cut := 3; cut <= len(w)-3 && isASCII(w); cut++ {
			if known(w[:cut]) && known(w[cut:]) && min(cut, len(w)-cut) > min(best, len(w)-best) {
				best = cut
			}
		}
		if best > 0 {
			out = append(out, w[:best], w[best:])
			continue
		}
		out = append(out, w)
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (ix *Index) qterm(st string, w float64) qterm {
	t := qterm{stem: st, w: w, id: -1}
	if id, ok := ix.terms[st]; ok {
		t.id = id
	}
	return t
}

// rewritePhrases replaces the word runs listed in phrases.
func rewritePhrases(words []string) []string {
	out := make([]string, 0, len(words)+4)
	for i := 0; i < len(words); {
		matched := false
		for _, ph := range phrases {
			if i+len(ph.from) > len(words) {
				continue
			}
			ok := true
			for j, f := range ph.from {
				if words[i+j] != f {
					ok = false
					break
				}
			}
			if ok {
				out = append(out, ph.to...)
				i += len(ph.from)
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, words[i])
			i++
		}
	}
	return out
}

// Ranking weights. Concept matches are scaled by the concept's idf (0.7
// for a word every endpoint has, about 7 for a word only one has); the
// other features are in the same units.
var (
	wName       = 1.0  // a concept names the operation (operationId, path)
	wRes        = 0.7  // ... and the resource the path ends in
	wSum        = 0.6  // a concept is in the summary
	wDesc       = 0.2  // ... only in the opening of the description
	wTag        = 0.3  // ... in a tag
	wParam      = 0.1  // ... in a parameter name
	wResp       = 0.05 // ... in what the success answer is
	wOwn        = 0.3  // a word only the spec's own words of parts (or a description's later part) have: as a tag
	wCov        = 1.0  // share of concepts matched, times their mean idf
	wAct        = 2.5  // the operation's own verb is the intent's action
	wMeth       = 2.0  // the method serves the intent's action
	wShape      = 1.5  // collection path for list, item path for get
	wVerb       = 1.0  // the operation's leading verb is one the intent uses
	wExtra      = 0.8  // per name word the query leaves unexplained (idf-scaled)
	wExtraFloor = 0.3  // ... counted at this share whatever its idf
	wBleve      = 2.0  // bleve's own relevance, normalised to the best hit
	wGetish     = 1.0  // no verb given: reading is the likelier intent
	wNounShape  = 1.0  // ... a collection for a plural, an item for a singular
)

// rank scores one candidate.
func (ix *Index) rank(p *plan, n int, bleveNorm float64) float64 {
	e := ix.entries[n]
	s := wBleve * bleveNorm
	matched := 0
	idfSum := 0.0
	for _, c := range p.concepts {
		best := 0.0
		for _, t := range c.terms {
			if t.id < 0 {
				continue
			}
			f := p.fieldsOf(n, t)
			if f == 0 {
				continue
			}
			best = max(best, fieldWeight(f)*t.w)
		}
		s += c.idf * best
		idfSum += c.idf
		if best > 0 {
			matched++
		}
	}
	if n := len(p.concepts); n > 0 {
		s += wCov * float64(matched) / float64(n) * idfSum / float64(n)
	}
	for _, c := range p.own {
		for _, t := range c.terms {
			if p.fieldsOf(n, t)&inOwn != 0 {
				s += wOwn * c.idf * t.w
				break
			}
		}
	}
	s = actionScore(p, e, n, s)
	// Name words the query does not explain make the operation more
	// specific than what was asked ("pulls/list-review-comments" for
	// "list pull requests").
	extra := 0.0
	for _, id := range e.name {
		if containsID(p.known, id) {
			continue
		}
		// A common word left over still narrows the operation:
		// "orgs/get-org-role" is not "organization details".
		extra += wExtraFloor + (1-wExtraFloor)*ix.idf[id]/ix.maxIDF
	}
	s -= wExtra * extra
	return s
}

// fieldWeight is what a query term found in the fields f of an entry is worth.
func fieldWeight(f field) float64 {
	v := 0.0
	for _, fw := range [...]struct {
		bit field
		w   float64
	}{{inName, wName}, {inRes, wRes}, {inSum, wSum}, {inDesc, wDesc}, {inTag, wTag}, {inParam, wParam}, {inResp, wResp}} {
		if f&fw.bit != 0 {
			v += fw.w
		}
	}
	return v
}

// actionScore adds to s what entry n's action, method and shape (one item or
// a collection) are worth for the query's action, or for none.
func actionScore(p *plan, e *entry, n int, s float64) float64 {
	method := e.hit.Method
	if p.act != actNone {
		switch {
		case e.act == p.act:
			s += wAct
		case related(p.act, e.act):
			s += wAct * 0.4
		}
		ms := p.act.methods()
		switch {
		case p.act == actCancel && (method == "POST" || method == "DELETE"):
			// Stopping is a POST to .../cancel as often as a DELETE.
			s += wMeth
		case len(ms) > 0 && method == ms[0]:
			s += wMeth
		case contains(ms, method):
			s += wMeth * 0.5
		default:
			s -= wMeth * 0.5
		}
		switch p.act {
		case actList, actSearch:
			if !e.item && method == "GET" {
				s += wShape
			}
		case actGet:
			if e.item && method == "GET" {
				s += wShape * 0.5
			}
		case actCreate:
			// New things are posted to their collection.
			if !e.item {
				s += wShape * 0.5
			}
		case actUpdate, actDelete:
			if e.item {
				s += wShape * 0.3
			}
		}
		for _, t := range p.verbTerms {
			if t.id >= 0 && p.fieldsOf(n, t)&inVerb != 0 {
				s += wVerb * t.w
				break
			}
		}
	} else if method == "GET" {
		// No verb: "followers of a user" reads, a plural reads a
		// list, a singular one thing.
		s += wGetish
		switch {
		case p.plural && !e.item:
			s += wNounShape
		case !p.plural && e.item:
			s += wNounShape * 0.5
		}
	}
	return s
}

// related reports whether two different actions are near each other.
func related(a, b action) bool {
	pair := func(x, y action) bool { return a == x && b == y || a == y && b == x }
	return pair(actList, actGet) || pair(actList, actSearch) || pair(actGet, actSearch) ||
		pair(actCreate, actDo) || pair(actUpdate, actDo) || pair(actCancel, actDelete) ||
		pair(actCancel, actDo) || pair(actCreate, actUpdate)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsID(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// evidence is how well the words of the query name an operation: the
// largest share of the query's content words (those no endpoint has
// counting as missed) that one of the first lexical hits has in its
// name, path or summary. 1 when every word names the best hit; 0 when
// the words match descriptions at most, or nothing.
func (p *plan) evidence(top []scored) float64 {
	if p.asked == 0 {
		return 1 // verbs and filters only: nothing for meaning to add
	}
	best := 0.0
	for _, s := range top[:min(len(top), evidenceHits)] {
		n := 0.0
		for _, c := range p.concepts {
			w := 0.0
			for _, t := range c.terms {
				if t.id < 0 {
					continue
				}
				// A synonym's match is weaker evidence than the word's.
				if s.e.bits(t.id)&(inName|inRes|inSum) != 0 {
					w = max(w, t.w)
				}
			}
			n += min(w, 1)
		}
		best = max(best, n)
	}
	return best / float64(p.asked)
}

// evidenceHits is how many of the first lexical hits evidence looks at.
const evidenceHits = 3
