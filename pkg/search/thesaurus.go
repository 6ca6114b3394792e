package search

// The API vocabulary: how agents word an intent against how specs name
// operations. It is hand written on purpose; generic expansion (WordNet,
// co-occurrence, feedback) was tried elsewhere and measured nothing.

// action is the kind of operation an intent or an operation names.
type action uint8

const (
	actNone   action = iota
	actList          // read a collection
	actGet           // read one thing
	actCreate        // make something new
	actUpdate        // change something that exists
	actDelete        // remove something
	actSearch        // query across things
	actCancel        // stop something in progress
	actDo            // a domain verb (merge, refund, ban): POST/PUT-ish
)

// methods returns the HTTP methods an action is usually served by, the
// first being the most likely.
func (a action) methods() []string {
	switch a {
	case actList, actGet, actSearch:
		return []string{"GET"}
	case actCreate:
		return []string{"POST", "PUT"}
	case actUpdate:
		return []string{"PATCH", "PUT", "POST"}
	case actDelete:
		return []string{"DELETE"}
	case actCancel:
		return []string{"POST", "DELETE", "PUT", "PATCH"}
	case actDo:
		return []string{"POST", "PUT", "PATCH"}
	}
	return nil
}

// verb describes a word that names an action.
type verb struct {
	act action
	// also are words an operation may use for the same action, matched
	// as content with a reduced weight ("remove" also finds "delete").
	also []string
	// content keeps the word itself as a content term at full weight
	// (domain verbs such as "merge" are what the operation is named for).
	content bool
	// weak keeps the word as a content term at a low weight: "all" in
	// "show all namespaces" asks for a list, yet "pods across all
	// namespaces" names listCoreV1PodForAllNamespaces.
	weak bool
}

var verbs = map[string]verb{
	// Reading a collection.
	"list":      {act: actList},
	"enumerate": {act: actList, also: []string{"list"}},
	"browse":    {act: actList, also: []string{"list"}},
	"all":       {act: actList, weak: true},
	"every":     {act: actList, also: []string{"all"}},
	"history":   {act: actList, also: []string{"list"}},
	// Names say how a list is served ("listPaginatedFineTuningJobs"):
	// the word is not one the intent must explain.
	"paginated": {act: actList, also: []string{"list"}},

	// Reading one thing.
	"get":      {act: actGet},
	"fetch":    {act: actGet, also: []string{"get", "fetch", "read"}},
	"retrieve": {act: actGet, also: []string{"get", "retrieve", "read", "fetch"}},
	"show":     {act: actGet, also: []string{"get", "list"}},
	"read":     {act: actGet, also: []string{"get", "read"}},
	"view":     {act: actGet, also: []string{"get"}},
	"display":  {act: actGet, also: []string{"get"}},
	"describe": {act: actGet, also: []string{"get"}},
	"inspect":  {act: actGet, also: []string{"get"}},
	"see":      {act: actGet, also: []string{"get"}},
	"obtain":   {act: actGet, also: []string{"get"}},
	"which":    {act: actGet, also: []string{"list"}},
	"what":     {act: actGet},
	"check":    {act: actGet, also: []string{"check", "get"}},
	"download": {act: actGet, also: []string{"download", "content"}, content: true},
	"lookup":   {act: actGet, also: []string{"get"}},
	"look":     {act: actGet, also: []string{"get"}},
	"grab":     {act: actGet, also: []string{"get"}},
	"examine":  {act: actGet, also: []string{"get"}},
	"peek":     {act: actGet, also: []string{"get"}},
	// A noun phrase naming the particulars of one thing asks to read it
	// ("organization details", "details of a call").
	"details":     {act: actGet, also: []string{"get"}},
	"detail":      {act: actGet, also: []string{"get"}},
	"information": {act: actGet, also: []string{"get"}},
	"info":        {act: actGet, also: []string{"get"}},

	// Searching.
	"search": {act: actSearch, content: true},
	"find":   {act: actSearch, also: []string{"search", "get", "list"}},
	"query":  {act: actSearch, also: []string{"search"}},

	// Creating.
	"create":      {act: actCreate},
	"add":         {act: actCreate, also: []string{"add", "create"}},
	"new":         {act: actCreate, also: []string{"create"}},
	"make":        {act: actCreate, also: []string{"create"}},
	"post":        {act: actCreate, also: []string{"create"}},
	"insert":      {act: actCreate, also: []string{"create", "add"}},
	"register":    {act: actCreate, also: []string{"create"}},
	"open":        {act: actCreate, also: []string{"create"}},
	"start":       {act: actCreate, also: []string{"create", "start"}},
	"begin":       {act: actCreate, also: []string{"create", "start"}},
	"submit":      {act: actCreate, also: []string{"create"}},
	"generate":    {act: actCreate, also: []string{"create"}, content: true},
	"ask":         {act: actCreate, also: []string{"request", "create"}},
	"request":     {act: actCreate, also: []string{"request", "create"}},
	"launch":      {act: actCreate, also: []string{"create", "run"}},
	"publish":     {act: actCreate, also: []string{"create"}},
	"send":        {act: actCreate, also: []string{"create", "send"}},
	"upload":      {act: actCreate, also: []string{"upload", "create", "file"}, content: true},
	"place":       {act: actCreate, also: []string{"create"}},
	"spawn":       {act: actCreate, also: []string{"create"}},
	"provision":   {act: actCreate, also: []string{"create"}},
	"write":       {act: actCreate, also: []string{"create"}},
	"give":        {act: actCreate, also: []string{"add", "create", "grant"}},
	"grant":       {act: actCreate, also: []string{"add", "grant"}},
	"store":       {act: actCreate, also: []string{"create"}},
	"schedule":    {act: actCreate, also: []string{"create", "schedule"}},
	"initiate":    {act: actCreate, also: []string{"create"}},
	"buy":         {act: actCreate, also: []string{"purchase", "buy", "create"}},
	"purchase":    {act: actCreate, also: []string{"purchase", "buy", "create"}},
	"turn":        {act: actCreate, also: []string{"create"}},
	"convert":     {act: actCreate, also: []string{"create"}},
	"build":       {act: actCreate, also: []string{"create"}},
	"establish":   {act: actCreate, also: []string{"create"}},
	"setup":       {act: actCreate, also: []string{"create"}},
	"define":      {act: actCreate, also: []string{"create"}},
	"compose":     {act: actCreate, also: []string{"create"}},
	"mint":        {act: actCreate, also: []string{"create"}},
	"instantiate": {act: actCreate, also: []string{"create"}},
	"initialize":  {act: actCreate, also: []string{"create"}},
	"issue":       {act: actNone},

	// Changing.
	"update":    {act: actUpdate},
	"edit":      {act: actUpdate, also: []string{"update", "edit"}},
	"modify":    {act: actUpdate, also: []string{"update"}},
	"change":    {act: actUpdate, also: []string{"update", "change"}},
	"patch":     {act: actUpdate, also: []string{"update", "patch"}},
	"partially": {act: actUpdate, also: []string{"patch"}},
	"partial":   {act: actUpdate, also: []string{"patch"}},
	"rename":    {act: actUpdate, also: []string{"update", "name"}},
	"set":       {act: actUpdate, also: []string{"set", "update"}},
	"alter":     {act: actUpdate, also: []string{"update"}},
	"replace":   {act: actUpdate, also: []string{"replace", "update"}},
	"configure": {act: actUpdate, also: []string{"update", "set", "config"}},
	"adjust":    {act: actUpdate, also: []string{"update"}},
	"toggle":    {act: actUpdate, also: []string{"update", "enable", "disable"}},
	"tweak":     {act: actUpdate, also: []string{"update"}},
	"amend":     {act: actUpdate, also: []string{"update"}},
	"revise":    {act: actUpdate, also: []string{"update"}},
	"overwrite": {act: actUpdate, also: []string{"replace", "update"}},

	// Removing.
	"delete":     {act: actDelete},
	"remove":     {act: actDelete, also: []string{"delete", "remove"}},
	"destroy":    {act: actDelete, also: []string{"delete"}},
	"erase":      {act: actDelete, also: []string{"delete"}},
	"drop":       {act: actDelete, also: []string{"delete"}},
	"kill":       {act: actDelete, also: []string{"delete", "terminate"}},
	"terminate":  {act: actDelete, also: []string{"delete", "terminate"}},
	"purge":      {act: actDelete, also: []string{"delete"}},
	"discard":    {act: actDelete, also: []string{"delete"}},
	"unset":      {act: actDelete, also: []string{"delete", "remove"}},
	"trash":      {act: actDelete, also: []string{"delete"}},
	"uninstall":  {act: actDelete, also: []string{"delete"}},
	"revoke":     {act: actDelete, also: []string{"revoke", "delete", "remove"}},
	"clear":      {act: actDelete, also: []string{"delete", "clear"}},
	"kick":       {act: actDelete, also: []string{"remove", "delete", "member"}},
	"wipe":       {act: actDelete, also: []string{"delete"}},
	"nuke":       {act: actDelete, also: []string{"delete"}},
	"ditch":      {act: actDelete, also: []string{"delete"}},
	"eliminate":  {act: actDelete, also: []string{"delete"}},
	"deregister": {act: actDelete, also: []string{"delete"}},
	"unregister": {act: actDelete, also: []string{"delete"}},
	// Most APIs turn a feature off by deleting its setting (GitHub's
	// disable-* are DELETEs); the word stays content for the rest.
	"disable": {act: actDelete, content: true, also: []string{"delete", "remove"}},

	// Stopping.
	"cancel": {act: actCancel, content: true},
	"stop":   {act: actCancel, also: []string{"cancel", "stop"}},
	"abort":  {act: actCancel, also: []string{"cancel"}},
	"halt":   {act: actCancel, also: []string{"cancel"}},

	// Domain verbs: the word names the operation.
	"merge":       {act: actDo, content: true},
	"fork":        {act: actDo, content: true},
	"star":        {act: actDo, content: true},
	"unstar":      {act: actDo, content: true},
	"ban":         {act: actDo, content: true},
	"unban":       {act: actDo, content: true},
	"pin":         {act: actDo, content: true},
	"lock":        {act: actDo, content: true},
	"unlock":      {act: actDo, content: true},
	"approve":     {act: actDo, content: true, also: []string{"review"}},
	"evict":       {act: actDo, content: true},
	"refund":      {act: actDo, content: true},
	"capture":     {act: actDo, content: true},
	"confirm":     {act: actDo, content: true},
	"finalize":    {act: actDo, content: true},
	"void":        {act: actDo, content: true},
	"attach":      {act: actDo, content: true},
	"detach":      {act: actDo, content: true},
	"rerun":       {act: actDo, content: true},
	"retry":       {act: actDo, content: true, also: []string{"rerun"}},
	"archive":     {act: actDo, content: true},
	"invite":      {act: actDo, content: true},
	"follow":      {act: actDo, content: true},
	"unfollow":    {act: actDo, content: true},
	"subscribe":   {act: actDo, content: true, also: []string{"subscription"}},
	"transfer":    {act: actDo, content: true},
	"verify":      {act: actDo, content: true},
	"validate":    {act: actDo, content: true},
	"trigger":     {act: actDo, content: true, also: []string{"dispatch", "run"}},
	"dispatch":    {act: actDo, content: true},
	"run":         {act: actDo, content: true},
	"execute":     {act: actDo, content: true, also: []string{"run"}},
	"enable":      {act: actDo, content: true},
	"activate":    {act: actDo, content: true, also: []string{"enable"}},
	"deactivate":  {act: actDo, content: true, also: []string{"disable"}},
	"pause":       {act: actDo, content: true},
	"resume":      {act: actDo, content: true},
	"restore":     {act: actDo, content: true},
	"revert":      {act: actDo, content: true, also: []string{"rollback"}},
	"rollback":    {act: actDo, content: true, also: []string{"revert"}},
	"reopen":      {act: actDo, content: true},
	"suspend":     {act: actDo, content: true},
	"unsuspend":   {act: actDo, content: true},
	"mute":        {act: actDo, content: true},
	"unmute":      {act: actDo, content: true},
	"unpin":       {act: actDo, content: true},
	"unarchive":   {act: actDo, content: true},
	"unsubscribe": {act: actDo, content: true, also: []string{"subscription", "delete"}},
	"deploy":      {act: actDo, content: true, also: []string{"deployment", "create"}},
	"install":     {act: actDo, content: true, also: []string{"installation"}},
	"authorize":   {act: actDo, content: true, also: []string{"authorization"}},
	"react":       {act: actDo, also: []string{"reaction"}},
	"assign":      {act: actDo, content: true, also: []string{"assignee"}},
	"unassign":    {act: actDo, content: true, also: []string{"assignee", "remove"}},
	"block":       {act: actDo, content: true},
	"unblock":     {act: actDo, content: true},
	"accept":      {act: actDo, content: true},
	"decline":     {act: actDo, content: true},
	"reject":      {act: actDo, content: true},
	"scale":       {act: actDo, content: true},
	"transcribe":  {act: actDo, also: []string{"transcription"}},
	"translate":   {act: actDo, also: []string{"translation"}},
	"moderate":    {act: actDo, also: []string{"moderation"}},
	"comment":     {act: actDo, content: true},
	"reply":       {act: actDo, content: true, also: []string{"response", "completion"}},
	"chat":        {act: actDo, content: true, also: []string{"completion", "response"}},
	"commit":      {act: actNone, content: true},
	"restart":     {act: actDo, content: true, also: []string{"rerun", "restart"}},
}

// synonyms are resource and qualifier words with the words specs use for
// them. Expansions count with a reduced weight.
var synonyms = map[string][]string{
	"organisation": {"organization"},
	"sms":          {"message"},
	"mms":          {"message"},
	"text":         {"message"},
	"server":       {"guild"},
	"servers":      {"guild"},
	"me":           {"authenticated", "current", "my"},
	"my":           {"authenticated", "me", "current"},
	"mine":         {"authenticated", "me"},
	"myself":       {"authenticated", "me"},
	"money":        {"balance", "transfer", "payout", "fund"},
	"diff":         {"compare"},
	"difference":   {"compare"},
	"latest":       {"latest", "recent"},
	"newest":       {"latest"},
	"recent":       {"latest"},
	"harmful":      {"moderation", "moderate", "classify"},
	"unsafe":       {"moderation", "moderate"},
	"offensive":    {"moderation"},
	"toxic":        {"moderation"},
	"abuse":        {"moderation"},
	"speech":       {"audio", "speech"},
	"voice":        {"audio", "speech"},
	"tts":          {"speech", "audio"},
	"audio":        {"audio", "speech"},
	"recording":    {"recording", "audio"},
	"picture":      {"image"},
	"photo":        {"image"},
	"embed":        {"embedding"},
	"vector":       {"embedding", "vector"},
	"vectors":      {"embedding", "vector"},
	"conversation": {"chat", "thread", "completion"},
	"answer":       {"response", "completion"},
	"quota":        {"rate", "limit"},
	"remaining":    {"rate", "limit"},
	"left":         {"rate", "limit", "remaining"},
	"configmap":    {"config", "map"},
	"configmaps":   {"config", "map"},
	"cronjob":      {"cron", "job"},
	"cronjobs":     {"cron", "job"},
	"logs":         {"log"},
	"emoji":        {"reaction", "emoji"},
	"access":       {"permission", "collaborator"},
	"webhook":      {"hook", "webhook"},
	"webhooks":     {"hook", "webhook"},
	"hook":         {"webhook"},
	"profile":      {"user"},
	"person":       {"user"},
	"people":       {"user"},
	"username":     {"user"},
	"account":      {"user", "account"},
	"payment":      {"payment", "intent", "charge"},
	"pay":          {"payment", "charge"},
	"discount":     {"coupon", "discount", "promotion"},
	"credential":   {"secret", "key", "token"},
	"credentials":  {"secret", "key", "token"},
	"pipeline":     {"workflow"},
	"ci":           {"workflow", "action"},
	"container":    {"pod"},
	"containers":   {"pod"},
	"cluster":      {"node", "namespace"},
	"calls":        {"call"},
	"phone":        {"phone", "number", "call"},
	"number":       {"number", "phone"},
	"environment":  {"environment", "variable"},
	"env":          {"environment", "variable"},
	"reviewer":     {"reviewer", "review"},
	"reviewers":    {"reviewer", "review"},
	"finetune":     {"fine", "tuning"},
	"finetuning":   {"fine", "tuning"},
	"gpt":          {"chat", "completion"},
	"llm":          {"chat", "completion", "model"},
	"prompt":       {"completion", "prompt"},
	"kubernetes":   {"core", "version"},
	"k8s":          {"core"},
	"bank":         {"payout", "bank", "external"},
	"file":         {"file", "content"},
	"contents":     {"content"},
	"changed":      {"file", "diff"},
	"changes":      {"diff", "compare"},
	"manually":     {"dispatch"},
	"guild":        {"guild", "server"},
	"namespace":    {"namespaced", "namespace"},
	"namespaces":   {"namespace"},
	"client":       {"customer"},
	"clients":      {"customer"},
	"bill":         {"invoice"},
	"bills":        {"invoice"},
	"settings":     {"setting", "config", "configuration", "preference"},
	"preferences":  {"preference", "setting"},
	"password":     {"secret", "credential", "token"},
	"passwords":    {"secret", "credential", "token"},
	"funds":        {"balance", "payout", "transfer"},
	"owner":        {"owner", "user"},
	"disk":         {"volume", "storage"},
	"disks":        {"volume", "storage"},
	"storage":      {"storage", "volume"},
	"card":         {"card", "payment", "method", "source"},
	"cards":        {"card", "payment", "method", "source"},
}

// abbreviations pair short forms that names use with the words they
// stand for; either form finds the other at full weight.
var abbreviations = [][2]string{
	{"repo", "repository"}, {"repos", "repositories"}, {"org", "organization"},
	{"orgs", "organizations"}, {"pr", "pull"}, {"prs", "pulls"},
	{"config", "configuration"}, {"env", "environment"}, {"auth", "authentication"},
	{"app", "application"}, {"apps", "applications"}, {"info", "information"},
	{"db", "database"}, {"msg", "message"}, {"dm", "direct"}, {"pic", "picture"},
}

// abbrev maps each side of abbreviations to the other.
var abbrev = func() map[string]string {
	m := map[string]string{}
	for _, p := range abbreviations {
		m[p[0]] = p[1]
		m[p[1]] = p[0]
	}
	return m
}()

// oneItem is the word a phrase such as "by id" is rewritten to: not a
// word splitWords can make, it marks the intent as one identified item.
const oneItem = "#one"

// phrase rewrites a run of query words into other words before anything
// else reads them ("who am i" asks for the authenticated user).
type phrase struct {
	from []string
	to   []string
}

var phrases = []phrase{
	{[]string{"who", "am", "i"}, []string{"get", "authenticated", "user", "me"}},
	{[]string{"whoami"}, []string{"get", "authenticated", "user", "me"}},
	{[]string{"current", "user"}, []string{"authenticated", "user", "me"}},
	{[]string{"logged", "in", "user"}, []string{"authenticated", "user", "me"}},
	{[]string{"pull", "requests"}, []string{"pull"}},
	{[]string{"pull", "request"}, []string{"pull"}},
	{[]string{"merge", "requests"}, []string{"merge", "pull"}},
	{[]string{"hang", "up"}, []string{"terminate", "end", "update"}},
	{[]string{"text", "to", "speech"}, []string{"speech", "audio"}},
	{[]string{"speech", "to", "text"}, []string{"transcription", "audio"}},
	{[]string{"rate", "limit"}, []string{"rate", "limit"}},
	{[]string{"how", "many"}, []string{"count"}},
	{[]string{"how", "much"}, []string{"amount"}},
	// Phrasal verbs: the particle changes what the verb means.
	{[]string{"set", "up"}, []string{"create"}},
	{[]string{"sign", "up"}, []string{"create", "user"}},
	{[]string{"look", "up"}, []string{"get"}},
	{[]string{"look", "at"}, []string{"get"}},
	{[]string{"pull", "up"}, []string{"get"}},
	{[]string{"bring", "up"}, []string{"get"}},
	{[]string{"find", "out"}, []string{"get"}},
	{[]string{"get", "rid", "of"}, []string{"remove"}},
	{[]string{"do", "away", "with"}, []string{"remove"}},
	{[]string{"throw", "away"}, []string{"delete"}},
	{[]string{"tear", "down"}, []string{"delete"}},
	{[]string{"take", "down"}, []string{"delete"}},
	{[]string{"wipe", "out"}, []string{"delete"}},
	{[]string{"clean", "up"}, []string{"delete"}},
	{[]string{"shut", "down"}, []string{"delete", "stop"}},
	{[]string{"spin", "down"}, []string{"delete", "stop"}},
	{[]string{"turn", "off"}, []string{"disable"}},
	{[]string{"switch", "off"}, []string{"disable"}},
	{[]string{"turn", "on"}, []string{"enable"}},
	{[]string{"switch", "on"}, []string{"enable"}},
	{[]string{"spin", "up"}, []string{"create"}},
	{[]string{"kick", "off"}, []string{"start"}},
	{[]string{"fire", "off"}, []string{"trigger"}},
	{[]string{"fire", "up"}, []string{"start"}},
	{[]string{"put", "together"}, []string{"create"}},
	{[]string{"hand", "over"}, []string{"transfer"}},
	{[]string{"hand", "off"}, []string{"transfer"}},
	{[]string{"roll", "back"}, []string{"rollback"}},
	{[]string{"opt", "out"}, []string{"unsubscribe"}},
	{[]string{"opt", "in"}, []string{"subscribe"}},
	{[]string{"pay", "out"}, []string{"send", "payout"}},
	{[]string{"pay", "back"}, []string{"refund"}},
	{[]string{"top", "up"}, []string{"add", "topup"}},
	{[]string{"fill", "in"}, []string{"update"}},
	{[]string{"fill", "out"}, []string{"update"}},
	{[]string{"add", "on"}, []string{"add"}},
	// "show me the tags": "me" is the reader, not the authenticated
	// user the word asks for elsewhere ("who follows me").
	{[]string{"show", "me"}, []string{"show"}},
	{[]string{"fetch", "me"}, []string{"fetch"}},
	{[]string{"get", "me"}, []string{"get"}},
	{[]string{"give", "me"}, []string{"get"}},
	{[]string{"tell", "me"}, []string{"get"}},
	{[]string{"find", "me"}, []string{"find"}},
	{[]string{"list", "me"}, []string{"list"}},
	{[]string{"let", "me", "see"}, []string{"see"}},
	// "by id" names no resource (every item path has an id), but it says
	// the intent is one identified thing: "find pet by id" is a get.
	{[]string{"by", "id"}, []string{oneItem}},
	{[]string{"by", "its", "id"}, []string{oneItem}},
	{[]string{"with", "id"}, []string{oneItem}},
	{[]string{"fine", "tune"}, []string{"fine", "tuning"}},
	{[]string{"fine", "tuned"}, []string{"fine", "tuned"}},
	{[]string{"config", "map"}, []string{"config", "map"}},
	{[]string{"cron", "job"}, []string{"cron", "job"}},
}

// stopWords are dropped from queries. Words that name things in APIs
// ("all", "me", "my", "new") are not stop words here.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "on": true,
	"for": true, "from": true, "with": true, "by": true, "at": true, "into": true,
	"and": true, "or": true, "is": true, "are": true, "was": true, "were": true,
	"be": true, "been": true, "it": true, "its": true, "this": true, "that": true,
	"these": true, "those": true, "do": true, "does": true, "did": true, "can": true,
	"could": true, "should": true, "would": true, "will": true, "please": true,
	"some": true, "any": true, "there": true, "their": true, "them": true, "they": true,
	"we": true, "our": true, "you": true, "your": true, "how": true, "want": true,
	"need": true, "like": true, "via": true, "using": true, "use": true, "about": true,
	"have": true, "has": true, "had": true, "across": true, "whether": true, "if": true,
	"up": true, "out": true, "who": true, "am": true, "so": true, "as": true,
	"between": true, "two": true, "one": true, "someone": true, "something": true,
	"given": true, "specific": true, "particular": true, "running": true, "currently": true,
}
