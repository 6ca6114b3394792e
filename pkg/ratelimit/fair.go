package ratelimit

import (
	"cmp"
	"slices"
)

// The wait queue of an upstream is fair across principals: a start-time fair queue. A
// call of principal p joining the queue is tagged S = max(vtime, F[p]), and F[p] becomes
// S + 1/weight(p); vtime is the tag of the call the queue last admitted, and the queue is
// kept in tag order. So while ada has 30 calls waiting and bob sends one, bob's call goes
// next but one, not 31st, and a principal of weight 2 is served twice for each call of one
// of weight 1 while both wait. Within one principal, direct calls take the earliest of its
// tags, then background calls (a script's), each in arrival order. Ties go to the
// principal served least recently, then to the earlier arrival.

// join puts w into u's queue in its fair place, and nudges a new head.
func (u *upstream) join(w *waiter) {
	if u.finish == nil {
		u.finish = make(map[string]float64)
	}
	u.seq++
	w.seq = u.seq
	p := w.principal
	s := max(u.vtime, u.finish[p])
	u.finish[p] = s + 1/u.weight(w)
	w.tag = s
	head := u.headWaiter()
	u.queue = append(u.queue, w)
	// the principal's calls share its tags: direct ones take the earliest
	var mine []*waiter
	var tags []float64
	for _, o := range u.queue {
		if o.principal == p {
			mine = append(mine, o)
			tags = append(tags, o.tag)
		}
	}
	if len(mine) > 1 {
		slices.Sort(tags)
		slices.SortStableFunc(mine, func(a, b *waiter) int {
			if a.background != b.background {
				if a.background {
					return 1
				}
				return -1
			}
			return cmp.Compare(a.seq, b.seq)
		})
		for i, o := range mine {
			o.tag = tags[i]
		}
	}
	u.reorder()
	if h := u.headWaiter(); h != head && h != w {
		h.nudge()
	}
}

// served records that w, the head, was admitted: the queue's virtual time moves to its tag.
func (u *upstream) served(w *waiter) {
	u.vtime = max(u.vtime, w.tag)
	if u.lastServed == nil || len(u.lastServed) > maxServedTrack {
		// only the order among the principals waiting now matters
		u.lastServed = make(map[string]uint64)
	}
	u.serveSeq++
	u.lastServed[w.principal] = u.serveSeq
}

// maxServedTrack bounds the principals whose last service is remembered.
const maxServedTrack = 4096

// left forgets the finish tag of a principal with no call waiting any more, so its next
// call starts at the queue's virtual time.
func (u *upstream) left(principal string) {
	for _, o := range u.queue {
		if o.principal == principal {
			return
		}
	}
	delete(u.finish, principal)
}

func (u *upstream) headWaiter() *waiter {
	if len(u.queue) == 0 {
		return nil
	}
	return u.queue[0]
}

// reorder sorts the queue by tag, ties to the principal served least recently.
func (u *upstream) reorder() {
	slices.SortStableFunc(u.queue, func(a, b *waiter) int {
		if c := cmp.Compare(a.tag, b.tag); c != 0 {
			return c
		}
		if a.principal != b.principal {
			if c := cmp.Compare(u.lastServed[a.principal], u.lastServed[b.principal]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.seq, b.seq)
	})
}

// weight is w's principal's weight, found by its subject: budgets name principals as the
// configuration does.
func (u *upstream) weight(w *waiter) float64 {
	name := w.subject
	if name == "" {
		name = w.principal
	}
	if w, ok := u.budget.Weights[name]; ok && w > 0 {
		return w
	}
	return 1
}

// makeRoom frees a place in u's full queue for a call of principal when it holds less
// than its fair share of the depth (depth over the principals waiting, itself counted;
// at least 1): the last-served call of the principal holding the most leaves with
// QueueFull, as it would have had it come last. Only a principal over the share loses a
// place, so the share it keeps never falls below the newcomer's: no two principals evict
// each other in turn. Alone, one principal may fill the queue; with others waiting, it
// keeps its share, as a jq slot's owner does (answer.JQSlots). It reports whether a place
// was freed. The caller holds u.mu.
func (u *upstream) makeRoom(principal string, depth int) bool {
	held := map[string]int{}
	for _, o := range u.queue {
		held[o.principal]++
	}
	active := len(held)
	if held[principal] == 0 {
		active++
	}
	share := max(1, depth/active)
	if held[principal] >= share {
		return false
	}
	var most string
	for p, n := range held {
		if n > held[most] || n == held[most] && p > most {
			most = p
		}
	}
	if held[most] <= share {
		return false
	}
	var victim *waiter
	for _, o := range slices.Backward(u.queue) {
		if o.principal == most {
			victim = o
			break
		}
	}
	_, est := u.position(nil)
	u.remove(victim)
	if f, ok := u.finish[most]; ok {
		// its place goes back: the principal's next call takes the tag it had
		u.finish[most] = min(f, victim.tag)
	}
	victim.evicted, victim.evictedWait = true, est
	u.queueFull++
	victim.nudge()
	return true
}
