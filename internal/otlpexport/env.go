package otlpexport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Env is how FromEnv reads the environment; os.Getenv and os.ReadFile in
// production, maps in tests.
type Env struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// FromEnv returns the options the standard OTEL_EXPORTER_OTLP_* variables
// give, as the SDK's OTLP/HTTP exporter read them: the traces endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
// OTEL_EXPORTER_OTLP_ENDPOINT plus /v1/traces, else base plus /v1/traces,
// base being the config's otlp_endpoint), HEADERS, TIMEOUT (milliseconds),
// COMPRESSION (gzip), CERTIFICATE and CLIENT_CERTIFICATE/CLIENT_KEY (PEM
// files), each with its TRACES_ form winning. ok is false when no endpoint
// is set anywhere: tracing is off. The URL's scheme decides TLS, so
// INSECURE is not needed, and the protocol is always http/protobuf.
func FromEnv(env Env, base string) (opts Options, ok bool, err error) {
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(env.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
		}
		return strings.TrimSpace(env.Getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	var raw, from string
	switch {
	case env.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		raw, from = env.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	case env.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		raw, from = env.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT"
	case base != "":
		raw, from = base, "otlp_endpoint"
	default:
		return Options{}, false, nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Options{}, false, fmt.Errorf("%s must be an http:// or https:// URL with a host, like http://127.0.0.1:4318", from)
	}
	switch {
	case from != "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
		u.Path = path.Join("/", u.Path, "v1/traces")
	case u.Path == "":
		u.Path = "/"
	}
	opts.URL = u.String()

	if v, name := get("HEADERS"); v != "" {
		if opts.Headers, err = parseHeaders(v); err != nil {
			return Options{}, false, fmt.Errorf("%s: %w", name, err)
		}
	}
	if v, name := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return Options{}, false, fmt.Errorf("%s must be a number of milliseconds (got %q)", name, v)
		}
		opts.Timeout = time.Duration(ms) * time.Millisecond
	}
	if v, _ := get("COMPRESSION"); v == "gzip" {
		opts.Gzip = true
	}
	if u.Scheme == "https" {
		cfg, err := tlsConfig(env, get)
		if err != nil {
			return Options{}, false, err
		}
		if cfg != nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.TLSClientConfig = cfg
			opts.Client = &http.Client{Transport: t}
		}
	}
	return opts, true, nil
}

// parseHeaders reads the W3C baggage-like list "k1=v1,k2=v2" with
// percent-encoded values. An error names the entry's position, never its
// value: headers carry credentials.
func parseHeaders(v string) (map[string]string, error) {
	h := map[string]string{}
	for i, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, found := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !found || k == "" || strings.ContainsAny(k, " \t\r\n:\"(),/;<>?@[\\]{}") {
			return nil, fmt.Errorf("entry %d is not name=value", i+1)
		}
		dec, err := url.PathUnescape(val)
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s) has a bad percent-encoding", i+1, k)
		}
		h[http.CanonicalHeaderKey(k)] = strings.TrimSpace(dec)
	}
	return h, nil
}

func tlsConfig(env Env, get func(string) (string, string)) (*tls.Config, error) {
	var cfg tls.Config
	set := false
	if file, name := get("CERTIFICATE"); file != "" {
		pem, err := env.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", name, file)
		}
		cfg.RootCAs, set = pool, true
	}
	certFile, certName := get("CLIENT_CERTIFICATE")
	keyFile, keyName := get("CLIENT_KEY")
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%s and %s go together", certName, keyName)
	}
	if certFile != "" {
		certPEM, err := env.ReadFile(certFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certName, err)
		}
		keyPEM, err := env.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyName, err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, errors.New(certName + " and " + keyName + " are not a matching PEM pair")
		}
		cfg.Certificates, set = []tls.Certificate{cert}, true
	}
	if !set {
		return nil, nil
	}
	return &cfg, nil
}
