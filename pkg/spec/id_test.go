package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOperationIDWithShellCharactersIsSlugged: cleanOperationID kept every
// character but whitespace, so a spec's "ping$(touch${IFS}PWNED)" reached
// the audit log and init's config as it was, and ran when a shell read
// them. Characters outside idRune's set are slugged, as a path is.
func TestOperationIDWithShellCharactersIsSlugged(t *testing.T) {
	tests := []struct{ op, want string }{
		{"ping$(touch${IFS}PWNED)", "ping_touch_IFS_PWNED"},
		{"a`id`b", "a_id_b"},
		{"list;rm -rf ~", "list_rm_-rf"},
		{"x|y&z", "x_y_z"},
		{`say"hi"and'bye'`, "say_hi_and_bye"},
		{"<script>alert</script>", "script_alert_/script"},
		{"new\nline\r\tand\x00nul", "new_line_and_nul"},
		{"bidi\u202eevil\u2028ls\u0085nel", "bidi_evil_ls_nel"},
		{"  spaced  op ", "spaced_op"},
		{"$()", ""},
		// ordinary operationIds stay as the spec wrote them
		{"repos/list-for-org", "repos/list-for-org"},
		{"post_oauth2_token#refresh", "post_oauth2_token#refresh"},
		{"post_metadata_taxonomies_id_id_levels:append", "post_metadata_taxonomies_id_id_levels:append"},
		{"pets.list", "pets.list"},
		{"получитьПитомца", "получитьПитомца"},
	}
	for _, tt := range tests {
		if got := cleanOperationID(tt.op); got != tt.want {
			t.Errorf("cleanOperationID(%q) = %q, want %q", tt.op, got, tt.want)
		}
	}
}

// TestEndpointIDOfHostileOperationID: an operationId with nothing safe in
// it gives the method-and-path slug, and a path's control or format
// characters do not survive the slug either.
func TestEndpointIDOfHostileOperationID(t *testing.T) {
	doc := `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{
	  "/ping":{"get":{"operationId":"ping$(touch${IFS}PWNED)","responses":{"200":{"description":"ok"}}},
	           "post":{"operationId":"$(;)","responses":{"200":{"description":"ok"}}}},
	  "/a\u2028b\u202ec":{"get":{"responses":{"200":{"description":"ok"}}}}
	}}`
	s := mustParse(t, "h.json", doc, Options{Name: "h"})
	got := strings.Join(ids(s), " ")
	for _, want := range []string{"h.ping_touch_IFS_PWNED", "h.post_ping", "h.get_a_b_c"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("ids %q lack %q", got, want)
		}
	}
}

// TestSharedSpecIDsKeepOrdinaryOperationIDs: restricting operationIds to
// idRune's set changes no endpoint id of the shared corpus, and every id
// there is made of that set.
func TestSharedSpecIDsKeepOrdinaryOperationIDs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedSpecs, "*"))
	if len(files) == 0 {
		t.Skip("shared spec corpus not present")
	}
	if raceDetector || testing.Short() {
		t.Skip("loads large specs: runs without -race and -short")
	}
	total, changed := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, ".md") {
			continue
		}
		s, err := Load(t.Context(), f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Endpoints {
			total++
			if strings.IndexFunc(strings.TrimPrefix(e.ID, s.Name+"."), func(r rune) bool { return !idRune(r) }) >= 0 {
				t.Errorf("%s: id %q holds a character outside the safe set", filepath.Base(f), e.ID)
			}
			op := strings.TrimSpace(e.OperationID)
			if op == "" {
				continue
			}
			// the id as operationIds made it before: the spec's name and the operationId,
			// a "_N" suffix when two collide
			if id := s.Name + "." + op; e.ID != id && !strings.HasPrefix(e.ID, id+"_") {
				changed++
				t.Logf("%s: %q gives %q", filepath.Base(f), e.OperationID, e.ID)
			}
		}
	}
	if changed != 0 {
		t.Errorf("%d of %d ids changed, want 0", changed, total)
	}
	t.Logf("%d ids, %d changed", total, changed)
}
