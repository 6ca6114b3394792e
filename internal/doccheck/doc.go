// Package doccheck holds only tests: they read the repository's Markdown
// (README.md, the other top-level .md files and docs/) and fail on a relative
// link to a file that does not exist or to a #anchor no heading makes. No
// network: links with a scheme are not followed.
package doccheck
