// Package paging finds the next page of a list answer and says it as the
// parameters of the next call to the same operation, so a model (or a
// script) pages by repeating one call instead of reading a URL it could not
// send. Next reads an operation's x-speakeasy-pagination, a same-origin
// Link rel="next" (GitHub), and the body conventions of real APIs: Stripe's
// has_more with the last id, Slack's next_cursor, Kubernetes'
// metadata.continue, nextPageToken. A next page is offered only when every
// parameter it needs is one the operation declares, typed as declared. The
// package sends nothing: package invoke follows the pages it names.
package paging
