package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/config"
)

// checkMaxBytes refuses a --max-bytes, as invoke and run-script take it,
// that the tools would refuse: 0 (result_bytes) or a budget within
// answer's bounds.
func (c *common) checkMaxBytes(n int) error {
	if n != 0 && (n < answer.MinResultBytes || n > answer.MaxResultBytes) {
		return c.usageError("--max-bytes: %d is out of range: write a number of bytes from %d to %d", n, answer.MinResultBytes, answer.MaxResultBytes)
	}
	return nil
}

func cmdInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := oneShot("invoke", stdout, stderr, true)
	var params, body, contentType, jq string
	var maxBytes int
	var raw bool
	c.str(&params, "params", "", "parameters as a `JSON` object (path, query, header, cookie values by name)")
	c.str(&body, "body", "", "request body as `JSON` (@FILE reads a file)")
	c.str(&contentType, "content-type", "", "request body media `TYPE` (default: the operation's first)")
	c.str(&jq, "jq", "", "a jq `FILTER` over the JSON body, such as '[.[] | {id, name}]' (the read-only subset the tool takes)")
	c.integer(&maxBytes, "max-bytes", 0, "bytes", "the answer's budget in `BYTES`, 1024-48000 (default: result_bytes); a larger body is previewed")
	c.boolean(&raw, "raw", false, "print the body alone and whole as the upstream sent it (with --jq, the filter's result), not the answer around it")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return c.usageError("one ENDPOINT_ID is needed")
	}
	if err := c.checkMaxBytes(maxBytes); err != nil {
		return err
	}
	call := map[string]any{"endpointId": rest[0]}
	if params != "" {
		p, err := decodeJSONArg([]byte(params))
		if _, ok := p.(map[string]any); err != nil || !ok {
			if err == nil {
				err = errors.New("not an object")
			}
			return c.usageError("--params is not a JSON object: %v", err)
		}
		call["parameters"] = p
	}
	if body != "" {
		data := []byte(body)
		if strings.HasPrefix(body, "@") {
			if data, err = os.ReadFile(body[1:]); err != nil {
				return c.usageError("--body: %v: write @FILE with a readable file, or the JSON itself", err)
			}
		}
		b, err := decodeJSONArg(data)
		if err != nil {
			return c.usageError("--body is not JSON: %v", err)
		}
		call["requestBody"] = b
	}
	if contentType != "" {
		call["contentType"] = contentType
	}
	if jq != "" {
		call["jq"] = jq
	}
	if maxBytes != 0 {
		call["maxBytes"] = maxBytes
	}
	c.keepAnswers = true
	cl, a, err := inProcess(ctx, c)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	defer cl.Close()
	out, err := callTool(ctx, cl, "invoke", call, c)
	if err != nil {
		return err
	}
	p := answerPrinter{c: c, cfg: a.cfg}
	if raw {
		return p.raw(ctx, out, jq)
	}
	return p.invoke(ctx, out)
}

// cmdRunScript runs a run_script program from a file (or - for stdin)
// through the in-process server, as a model's call would.
func cmdRunScript(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := oneShot("run-script", stdout, stderr, true)
	var timeout time.Duration
	var maxBytes int
	c.timeout(&timeout, 0, "the run's deadline `DURATION` (30s, 2m; a bare number counts seconds; default: scripts.timeout)")
	c.integer(&maxBytes, "max-bytes", 0, "bytes", "the answer's budget in `BYTES`, 1024-48000 (default: result_bytes); a larger result is previewed")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return c.usageError("one FILE.js is needed (- reads stdin)")
	}
	if err := c.checkMaxBytes(maxBytes); err != nil {
		return err
	}
	var code []byte
	if rest[0] == "-" {
		code, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
	} else {
		code, err = os.ReadFile(rest[0])
	}
	if err != nil {
		return err
	}
	call := map[string]any{"code": string(code)}
	if timeout > 0 {
		// run_script takes whole seconds: a part of one is rounded up
		call["timeoutSeconds"] = int((timeout + time.Second - 1) / time.Second)
	}
	if maxBytes != 0 {
		call["maxBytes"] = maxBytes
	}
	// The command waits for the run's end: a runId answered past
	// answer_within would name a run that ends with this process.
	c.adjust = func(cfg *config.Config) { cfg.Scripts.AnswerWithin = 0 }
	cl, a, err := inProcess(ctx, c)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	defer cl.Close()
	out, err := callTool(ctx, cl, "run_script", call, c)
	if err != nil {
		return err
	}
	return answerPrinter{c: c, cfg: a.cfg}.script(out)
}
