// Package serialize turns the model's JSON arguments into the bytes of a
// request as an operation's OpenAPI description asks for them. Simple and
// Form render a parameter in its style (simple, label, matrix, form,
// spaceDelimited, pipeDelimited, deepObject), exploded or not, with the
// escapes of its place (EscapePath, EscapeQuery, EscapeQueryReserved,
// EscapeCookie). EncodeBody encodes a request body for the media type
// chosen: JSON (a JSON document sent as a string is decoded first), YAML,
// form bodies with per-field encodings, multipart parts (files given as
// base64, text or a path under an uploads directory), binary and text,
// and says what cannot be encoded as short problems instead of sending it.
// The package knows no endpoint, credential or limit and sends nothing:
// package invoke prepares and sends the call.
package serialize
