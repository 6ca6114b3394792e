package answer

// What the external tests of the stores check inside them.
var (
	NewAnswerID    = newAnswerID
	ParseAnswerID  = parseAnswerID
	AnswerIDLen    = answerIDLen
	GonePrincipals = gonePrincipals
)

// GoneLen is how many principals s remembers gone ids of.
func GoneLen(s *MemoryAnswers) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.gone.byPrincipal)
}
