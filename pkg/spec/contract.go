package spec

import (
	"encoding/json"
)

// This file holds the contract types inspect returns and the size bounds
// that apply to them.

// Defaults for DescribeOptions fields left zero.
const (
	DefaultDescribeTargetBytes = 3 << 10
	DefaultDescribeMaxBytes    = 16 << 10
)

// Limits of schema rendering that hold before any shrinking.
const (
	describeEnumCap       = 12   // enum values shown per schema
	describeBodyDepth     = 8    // object nesting rendered for optional request fields
	describeRequiredDepth = 32   // object nesting rendered along required fields
	describeRespDepth     = 3    // object nesting rendered for response schemas
	describeBodyNodes     = 3000 // schema nodes per request body before optional ones are cut
	describeRespNodes     = 800  // schema nodes per response schema
	describeShortValue    = 80   // longest example, default or pattern kept, in bytes
)

// DescribeOptions bound the size of a Contract. The zero value uses the
// defaults.
type DescribeOptions struct {
	// TargetBytes is the marshalled size the contract is shrunk towards by
	// dropping what a call does not need (descriptions, examples, deep
	// optional fields, response detail). If zero, DefaultDescribeTargetBytes.
	TargetBytes int
	// MaxBytes is the hard bound: past it, optional parameters and optional
	// body fields go too. What a valid call needs (required parameters and
	// required body fields with their types) is never cut, so a contract
	// made only of those may still exceed it. If zero,
	// DefaultDescribeMaxBytes.
	MaxBytes int
}

// Contract is an endpoint's operation as a model reads it from inspect.
type Contract struct {
	ID          string `json:"id"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
	BaseURL     string `json:"baseUrl,omitempty"`
	Deprecated  bool   `json:"deprecated,omitempty"`
	// Parameters are in spec order, path-level ones first.
	Parameters  []ContractParam    `json:"parameters,omitempty"`
	RequestBody *ContractBody      `json:"requestBody,omitempty"`
	Responses   *ContractResponses `json:"responses,omitempty"`
	// Security lists the alternative ways to authenticate: any one entry
	// will do, and it needs every scheme it names. An entry with no schemes
	// means the call may go without credentials. Nil: no auth declared.
	Security []ContractSecurity `json:"security,omitempty"`
	// Elided says what was cut to bound the size; empty when nothing was.
	Elided string `json:"elided,omitempty"`
}

// ContractParam is one parameter of a Contract.
type ContractParam struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required,omitempty"`
	Deprecated  bool    `json:"deprecated,omitempty"`
	Description string  `json:"description,omitempty"`
	Schema      *Schema `json:"schema,omitempty"`
}

// ContractBody is the request body of a Contract.
type ContractBody struct {
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// ContentTypes are the media types the operation accepts, in spec order;
	// the first is the default and the one Schema describes.
	ContentTypes []string `json:"contentTypes"`
	Schema       *Schema  `json:"schema,omitempty"`
	// Note names the content types whose schema differs from Schema.
	Note string `json:"note,omitempty"`
}

// ContractResponses are the main responses of a Contract.
type ContractResponses struct {
	// Success is the lowest 2xx response (else "default").
	Success *ContractResponse `json:"success,omitempty"`
	// Other maps every other status code to its one-line description.
	Other map[string]string `json:"other,omitempty"`
}

// ContractResponse is one response with its schema outline.
type ContractResponse struct {
	Status      string  `json:"status"`
	Description string  `json:"description,omitempty"`
	ContentType string  `json:"contentType,omitempty"`
	Schema      *Schema `json:"schema,omitempty"`
}

// ContractSecurity is one alternative of a Contract's security: every scheme
// it lists is needed.
type ContractSecurity struct {
	Schemes []ContractScheme `json:"schemes"`
}

// ContractScheme is a security scheme a call needs.
type ContractScheme struct {
	Name string `json:"name"`
	// Type is apiKey, http, oauth2, openIdConnect or mutualTLS ("unknown"
	// when the spec does not define the scheme).
	Type string `json:"type"`
	// Scheme is the http scheme (bearer, basic).
	Scheme string `json:"scheme,omitempty"`
	// In and ParamName say where an apiKey goes.
	In        string `json:"in,omitempty"`
	ParamName string `json:"paramName,omitempty"`
}

// Schema is a compact JSON Schema: references resolved, simple allOf merged,
// cycles cut with a "$cycle" marker naming the component.
type Schema struct {
	// Type is a string, or a list of strings when the spec gives several.
	Type        any               `json:"type,omitempty"`
	Format      string            `json:"format,omitempty"`
	Nullable    bool              `json:"nullable,omitempty"`
	Description string            `json:"description,omitempty"`
	Enum        []json.RawMessage `json:"enum,omitempty"`
	// MoreValues counts enum values not shown.
	MoreValues           int                `json:"$moreValues,omitempty"`
	Const                json.RawMessage    `json:"const,omitempty"`
	Default              json.RawMessage    `json:"default,omitempty"`
	Example              json.RawMessage    `json:"example,omitempty"`
	Minimum              json.RawMessage    `json:"minimum,omitempty"`
	Maximum              json.RawMessage    `json:"maximum,omitempty"`
	ExclusiveMinimum     json.RawMessage    `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum     json.RawMessage    `json:"exclusiveMaximum,omitempty"`
	MinLength            json.RawMessage    `json:"minLength,omitempty"`
	MaxLength            json.RawMessage    `json:"maxLength,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MinItems             json.RawMessage    `json:"minItems,omitempty"`
	MaxItems             json.RawMessage    `json:"maxItems,omitempty"`
	Deprecated           bool               `json:"deprecated,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AllOf                []*Schema          `json:"allOf,omitempty"`
	OneOf                []*Schema          `json:"oneOf,omitempty"`
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	// Fields names the properties of an object whose schemas were cut.
	Fields []string `json:"$fields,omitempty"`
	// Ref is a reference that could not be resolved (external, or missing).
	Ref string `json:"$ref,omitempty"`
	// Cycle names the component whose expansion was cut because it contains
	// itself.
	Cycle string `json:"$cycle,omitempty"`

	depth    int  // object nesting below the root (properties add one)
	level    int  // steps below the root (properties, items, alternatives)
	req      bool // every step from the root is a required property
	localReq bool // required by its parent object
	readOnly bool
	wOnly    bool
}
