package mcpserver

import "fmt"

// readOnlyNote is the sentence the instructions end with when every spec is
// served read-only, so the model does not plan writes it cannot make.
func readOnlyNote(readOnly bool) string {
	if !readOnly {
		return ""
	}
	return "\nThis server is read-only: only GET, HEAD and OPTIONS endpoints are served; nothing you call here changes data."
}

// excludedMessage is the not_found message and hint for an endpoint the
// spec has but the config leaves out: searching again would not find it,
// so the hint says so instead of sending the model back to search for it.
func excludedMessage(id, why string) (message, hint string) {
	return fmt.Sprintf("endpoint %q is excluded by the server's config: %s", id, why),
		"It exists in the spec but this server does not serve it, so it cannot be inspected or invoked; " +
			"use search to find an endpoint that is served, or ask the operator to change include/exclude/read_only."
}
