// Package answer is what becomes of an upstream's answer after the call: it is kept,
// and the model reads a bounded view of it.
//
//   - Answer is one answer as read from the wire (redacted); AnswerStore keeps them per
//     principal under random ids for read_response: MemoryAnswers in the process, or the
//     Redis store of package redisstore, shared by replicas. EncodeStored is the stored
//     form both hold.
//   - ResultCache points identical idempotent calls at the stored answer of the last one.
//   - Answer.Value tells a body's JSON (decoded once, or the Decoded the call left),
//     text and binary apart by one rule, which the model's view and a script's
//     api.invoke both read.
//   - NewView reads the body by Value, runs the caller's read-only jq filter on it
//     (CompileJQ, bounded by JQLimits and shared fairly through JQSlots) or cuts a window
//     of its main array, and Fit renders the largest Reply that fits the caller's budget:
//     the whole body, or a preview (PreviewJSON, PreviewText) that says what was left out
//     (Shaped) and how to ask for it (the hint).
//   - NextPageFor says how a reply names its next page: by its parameters, or by the
//     stored answer that holds them.
//
// The package sends nothing: package invoke makes the calls and hands their answers
// here.
package answer
