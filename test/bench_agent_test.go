package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP servers agents install today that BenchmarkAgent measures
// mcpkit against (issue 28), at the versions pinned there. npm installs
// them into a temporary directory at the start of the benchmark.
var agentPeerPackages = []agentPeerPackage{
	{Name: "server-memory", Package: "@modelcontextprotocol/server-memory", Version: "2026.8.31", Script: "dist/index.js"},
	{Name: "server-redis", Package: "@modelcontextprotocol/server-redis", Version: "2025.4.25", Script: "dist/index.js"},
	{Name: "gongrzhe-redis", Package: "@gongrzhe/server-redis-mcp", Version: "1.0.0", Script: "build/index.js"},
}

// agentPeerPackage is a peer server on npm and the script node runs.
type agentPeerPackage struct{ Name, Package, Version, Script string }

// The workload of BenchmarkAgent (issue 28): 2,000 short notes stored in
// calls of 100 and searched 100 times, each search a word that exactly
// agentTopicNotes notes hold (no more than the store's default search
// limit, 10, so that every server returns every match with its default
// arguments); 1,000 keys SET then GET one call each; 10 batches of 128
// SETs. The verdict is each server's median over agentRounds rounds.
const (
	agentNotes       = 2000
	agentIngestBatch = 100
	agentTopics      = agentNotes / agentTopicNotes
	agentTopicNotes  = 10
	agentSearches    = 100
	agentKeys        = 1000
	agentBatches     = 10
	agentBatchSize   = 128
	agentRounds      = 5
	agentWarmupCalls = 100 // untimed SET and GET calls to each RESP server before the first round
)

// The jobs, in the order of the logged tables.
const (
	jobIngest = "ingest"
	jobSearch = "search"
	jobSet    = "set"
	jobGet    = "get"
	jobBatch  = "batch128"
)

var agentJobs = []string{jobIngest, jobSearch, jobSet, jobGet, jobBatch}

// agentMinIngestSpeed is the ingest's target: at least twice server-memory's rate.
const agentMinIngestSpeed = 2

// agentSample is one run of one job on one server.
type agentSample struct {
	Took  time.Duration
	Ops   int // what the job counts: notes, searches, keys, SETs
	Calls int // tools/call requests made
	// Content and Structured are the bytes of result the client received,
	// summed over the job's calls (see resultBytes).
	Content, Structured int
	// First is the job's first result, as resultJSON gives it, for the
	// log: what the bytes are made of.
	First string
}

// Bytes is all the result bytes of the sample.
func (s agentSample) Bytes() int { return s.Content + s.Structured }

// resultBytes is what one call's result weighs: the JSON of its content
// array and of its structuredContent (0 when absent), as the go-sdk client
// decoded them, re-encoded compactly by encoding/json. Both are counted
// because a host may hand either (or both) to the model; the JSON-RPC
// envelope is not. The text inside a content item is counted as it came
// (a string), so a server that pretty-prints pays for its whitespace.
func resultBytes(res *mcp.CallToolResult) (content, structured int, err error) {
	c, err := json.Marshal(res.Content)
	if err != nil {
		return 0, 0, fmt.Errorf("encode content: %w", err)
	}
	if res.StructuredContent == nil {
		return len(c), 0, nil
	}
	s, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return 0, 0, fmt.Errorf("encode structuredContent: %w", err)
	}
	return len(c), len(s), nil
}

// agentMedian is the sample of median time among samples (the lower
// middle one for an even count), whose bytes are that run's.
func agentMedian(samples []agentSample) agentSample {
	s := slices.Clone(samples)
	slices.SortFunc(s, func(a, b agentSample) int { return int(a.Took - b.Took) })
	return s[(len(s)-1)/2]
}

// agentVerdict is one job's comparison of mcpkit with the best peer that
// can do it: the peer of least median time.
type agentVerdict struct {
	Job, Peer        string
	Mine, PeerSample agentSample
	// MinSpeed is how many times the peer's rate mcpkit must reach (1, or
	// agentMinIngestSpeed for the ingest).
	MinSpeed float64
}

// Speed is mcpkit's rate over the peer's (> 1: mcpkit faster).
func (v agentVerdict) Speed() float64 {
	return float64(v.PeerSample.Took) / float64(v.Mine.Took)
}

// Misses lists the targets the job misses: slower than MinSpeed times
// the peer, or more result bytes than the peer.
func (v agentVerdict) Misses() []string {
	var m []string
	if v.Speed() < v.MinSpeed {
		m = append(m, fmt.Sprintf("%s: mcpkit %.2f× %s's rate (%v against %v), target at least %.0f×",
			v.Job, v.Speed(), v.Peer, v.Mine.Took.Round(time.Microsecond), v.PeerSample.Took.Round(time.Microsecond), v.MinSpeed))
	}
	if v.Mine.Bytes() > v.PeerSample.Bytes() {
		m = append(m, fmt.Sprintf("%s: mcpkit returned %d bytes of results, %s %d (%.2f×), target no more",
			v.Job, v.Mine.Bytes(), v.Peer, v.PeerSample.Bytes(), float64(v.Mine.Bytes())/float64(v.PeerSample.Bytes())))
	}
	return m
}

// agentVerdicts compares, for each job in order, mcpkit's median with the
// best peer's among those that ran it (medians[job][server]; mcpkit is the
// server named mine). A job no peer ran has no verdict.
func agentVerdicts(medians map[string]map[string]agentSample, mine string) []agentVerdict {
	var out []agentVerdict
	for _, job := range agentJobs {
		byServer := medians[job]
		m, ok := byServer[mine]
		if !ok {
			continue
		}
		v := agentVerdict{Job: job, Mine: m, MinSpeed: 1}
		if job == jobIngest {
			v.MinSpeed = agentMinIngestSpeed
		}
		for _, name := range slices.Sorted(maps.Keys(byServer)) {
			s := byServer[name]
			if name != mine && (v.Peer == "" || s.Took < v.PeerSample.Took) {
				v.Peer, v.PeerSample = name, s
			}
		}
		if v.Peer != "" {
			out = append(out, v)
		}
	}
	return out
}

// agentTables renders the two tables BenchmarkAgent logs (read by
// test/cmd/benchreport): every job on every server, and each job's
// verdict against its best peer. servers orders the first table's rows.
func agentTables(medians map[string]map[string]agentSample, servers []string, verdicts []agentVerdict) string {
	var b strings.Builder
	b.WriteString("job / server                ops  calls    time ms        ops/s      bytes  content B  structured B\n")
	for _, job := range agentJobs {
		for _, name := range servers {
			s, ok := medians[job][name]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "%-24s  %5d  %5d  %9.1f  %11.0f  %9d  %9d  %12d\n", job+" / "+name, s.Ops, s.Calls,
				float64(s.Took)/1e6, float64(s.Ops)/s.Took.Seconds(), s.Bytes(), s.Content, s.Structured)
		}
	}
	b.WriteString("each job against the fastest peer that does it (speed: mcpkit's rate over the peer's):\n")
	b.WriteString("job       best peer         mcpkit ms    peer ms    speed  target  mcpkit B    peer B  B ratio  verdict\n")
	for _, v := range verdicts {
		verdict := "met"
		if len(v.Misses()) > 0 {
			verdict = "missed"
		}
		fmt.Fprintf(&b, "%-8s  %-16s  %9.1f  %9.1f  %7.2f  %6s  %8d  %8d  %7.2f  %s\n", v.Job, v.Peer,
			float64(v.Mine.Took)/1e6, float64(v.PeerSample.Took)/1e6, v.Speed(), "≥ "+strconv.FormatFloat(v.MinSpeed, 'f', 0, 64)+"×",
			v.Mine.Bytes(), v.PeerSample.Bytes(), float64(v.Mine.Bytes())/float64(v.PeerSample.Bytes()), verdict)
	}
	b.WriteString("the first result of each job on each server, as [content, structuredContent] (cut at 240 bytes):\n")
	for _, job := range agentJobs {
		for _, name := range servers {
			if s, ok := medians[job][name]; ok {
				first := s.First
				if len(first) > 240 {
					first = strings.ToValidUTF8(first[:240], "") + "…"
				}
				fmt.Fprintf(&b, "%s / %s: %s\n", job, name, first)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// BenchmarkAgent runs an agent's everyday jobs through mcpkit and through
// the MCP servers agents install today (agentPeerPackages, installed from
// npm at pinned versions into a temporary directory), all over stdio from
// one go-sdk client, and compares wall time and the bytes of results the
// client received (issue 28): notes stored and searched (mcpkit's store,
// `write` and `search` over a text index, against server-memory's
// create_entities and search_nodes) and Redis keys SET and GET one call
// each and SET in batches of 128 (mcpkit's resp_execute against the set
// and get tools of the two Redis servers, which take one key a call: a
// batch is 128 of their calls). The RESP servers share one disposable
// redis-server, flushed before each server's jobs.
//
// Rounds alternate the servers (their order rotating), agentRounds of
// them, and each server's figure is its median round. A round's store
// jobs run on a fresh process over a new file (the ingest starts empty);
// mcpkit's text index is created before the timed ingest, so its cost of
// keeping the index is counted. Each job's results are checked after its
// clock stops, loosely enough to outlive changes of shape but really: every
// note of a searched word is in the search's result, GET's result holds
// the value SET, and redis-server holds every key SET with its value.
//
// b.N is ignored (`make bench-agent` runs it once). It fails when mcpkit
// is slower than the best peer that does the job, returns more result
// bytes than that peer, or ingests at less than twice server-memory's rate.
func BenchmarkAgent(b *testing.B) {
	peers := installAgentPeers(b)
	srv := redistest.Start(b, redistest.Options{})
	redis, err := resp.Dial(b.Context(), resp.DialOptions{Addr: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { redis.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "0"}, nil)
	url := "redis://" + srv.Addr

	stores := []agentStoreServer{
		{name: "mcpkit", start: func(dir string) *agentConn {
			return connectAgent(b, client, "mcpkit", exec.Command(binary(b), "store", "--log-level", "warn", filepath.Join(dir, "notes.db")))
		}, ingest: mcpkitIngestArgs, search: mcpkitSearchArgs, prepare: func(c *agentConn) {
			c.call(b, "create_text_index", json.RawMessage(`{"collection": "notes", "name": "text", "fields": ["text"]}`))
		}},
		{name: "server-memory", start: func(dir string) *agentConn {
			cmd := exec.Command("node", peers["server-memory"])
			cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(dir, "memory.jsonl"))
			return connectAgent(b, client, "server-memory", cmd)
		}, ingest: memoryIngestArgs, search: memorySearchArgs},
	}
	resps := []agentRESPServer{
		{name: "mcpkit", conn: connectAgent(b, client, "mcpkit", exec.Command(binary(b), "resp", "--port", strconv.Itoa(srv.Port), "--log-level", "warn")),
			batch: true},
		{name: "server-redis", conn: connectAgent(b, client, "server-redis", exec.Command("node", peers["server-redis"], url))},
		{name: "gongrzhe-redis", conn: connectAgent(b, client, "gongrzhe-redis", exec.Command("node", peers["gongrzhe-redis"], url))},
	}
	for _, s := range resps {
		s.warmUp(b, redis)
	}

	samples := map[string]map[string][]agentSample{}
	add := func(job, server string, s agentSample) {
		if samples[job] == nil {
			samples[job] = map[string][]agentSample{}
		}
		samples[job][server] = append(samples[job][server], s)
	}
	for round := range agentRounds {
		for i := range stores {
			s := stores[(i+round)%len(stores)]
			ingest, search := s.run(b, round)
			add(jobIngest, s.name, ingest)
			add(jobSearch, s.name, search)
		}
		for i := range resps {
			s := resps[(i+round)%len(resps)]
			set, get, batch := s.run(b, redis, round)
			add(jobSet, s.name, set)
			add(jobGet, s.name, get)
			add(jobBatch, s.name, batch)
		}
	}

	medians := map[string]map[string]agentSample{}
	for job, byServer := range samples {
		medians[job] = map[string]agentSample{}
		for name, s := range byServer {
			medians[job][name] = agentMedian(s)
		}
	}
	verdicts := agentVerdicts(medians, "mcpkit")
	b.Logf("an agent's jobs over MCP stdio, one go-sdk client, median of %d interleaved rounds (bytes: each result's content\n"+
		"and structuredContent as JSON; %s):\n%s", agentRounds, agentPeerVersions(peers), agentTables(medians, []string{"mcpkit", "server-memory", "server-redis", "gongrzhe-redis"}, verdicts))
	for _, v := range verdicts {
		for _, m := range v.Misses() {
			b.Error(m)
		}
	}
}

// installAgentPeers installs agentPeerPackages with npm into a temporary
// directory (no install scripts: none of them needs one, their builds are
// published) and returns the script of each by name.
func installAgentPeers(b *testing.B) map[string]string {
	b.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s not found: bench-agent needs Node 20+ and npm", tool)
		}
	}
	dir := b.TempDir()
	args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts", "--no-save"}
	for _, p := range agentPeerPackages {
		args = append(args, p.Package+"@"+p.Version)
	}
	if out, err := exec.Command("npm", args...).CombinedOutput(); err != nil {
		b.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	scripts := map[string]string{}
	for _, p := range agentPeerPackages {
		pkg := filepath.Join(dir, "node_modules", p.Package)
		var meta struct{ Version string }
		if data, err := os.ReadFile(filepath.Join(pkg, "package.json")); err != nil || json.Unmarshal(data, &meta) != nil || meta.Version != p.Version {
			b.Fatalf("npm installed %s %q, want %s (%v)", p.Package, meta.Version, p.Version, err)
		}
		scripts[p.Name] = filepath.Join(pkg, p.Script)
	}
	return scripts
}

// agentPeerVersions names each peer's version and the MCP TypeScript SDK
// version npm resolved for it (the packages pin it with a caret range).
func agentPeerVersions(scripts map[string]string) string {
	var parts []string
	for _, p := range agentPeerPackages {
		pkg := filepath.Dir(filepath.Dir(scripts[p.Name]))
		sdk := "?"
		for dir := pkg; dir != filepath.Dir(dir); dir = filepath.Dir(dir) { // as node resolves it
			var meta struct{ Version string }
			if data, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil && json.Unmarshal(data, &meta) == nil {
				sdk = meta.Version
				break
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s@%s with the MCP SDK %s", p.Name, p.Package, p.Version, sdk))
	}
	return strings.Join(parts, "; ")
}

// agentConn is a client session with one server and what it printed on
// stderr, for failures.
type agentConn struct {
	name   string
	cs     *mcp.ClientSession
	stderr *syncBuffer
}

// connectAgent starts cmd and connects client to it over stdio; the
// session is closed (and the process ended) at cleanup.
func connectAgent(b *testing.B, client *mcp.Client, name string, cmd *exec.Cmd) *agentConn {
	b.Helper()
	c := &agentConn{name: name, stderr: &syncBuffer{}}
	cmd.Stderr = c.stderr
	cs, err := client.Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("connect to %s: %v\n%s", name, err, c.stderr.String())
	}
	c.cs = cs
	b.Cleanup(func() { cs.Close() })
	return c
}

// call calls tool and fails on an error or an error result.
func (c *agentConn) call(b *testing.B, tool string, args json.RawMessage) *mcp.CallToolResult {
	res, err := c.cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		b.Fatalf("%s: %s: %v\n%s", c.name, tool, err, c.stderr.String())
	}
	if res.IsError {
		b.Fatalf("%s: %s %.200s: %s", c.name, tool, args, resultText(res))
	}
	return res
}

// job makes the calls of one job, timed, and returns its sample (the bytes
// counted after the clock stops) and the results, in order.
func (c *agentConn) job(b *testing.B, ops int, calls []agentCall) (agentSample, []*mcp.CallToolResult) {
	results := make([]*mcp.CallToolResult, len(calls))
	start := time.Now()
	for i, call := range calls {
		results[i] = c.call(b, call.tool, call.args)
	}
	s := agentSample{Took: time.Since(start), Ops: ops, Calls: len(calls), First: resultJSON(b, results[0])}
	for _, res := range results {
		content, structured, err := resultBytes(res)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		s.Content += content
		s.Structured += structured
	}
	return s, results
}

// agentCall is one tools/call of a job, its arguments encoded beforehand.
type agentCall struct {
	tool string
	args json.RawMessage
}

// marshalCall encodes args for a call of tool.
func marshalCall(b *testing.B, tool string, args any) agentCall {
	data, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	return agentCall{tool, data}
}

// agentNote is note i: its name, and its text, which holds its topic's
// word (topicWord) once.
func agentNote(i int) (name, text string) {
	return fmt.Sprintf("note-%04d", i), fmt.Sprintf("note %d is about %s and a short observation on item %d kept for later", i, topicWord(i%agentTopics), i)
}

// topicWord is the word of topic t: fixed width, so that no topic's word
// holds another's (server-memory matches substrings).
func topicWord(t int) string { return fmt.Sprintf("topic%03d", t) }

// mcpkitIngestArgs is the store's write of notes [from, to).
func mcpkitIngestArgs(from, to int) (string, any) {
	ops := make([]map[string]any, 0, to-from)
	for i := from; i < to; i++ {
		name, text := agentNote(i)
		ops = append(ops, map[string]any{"op": "store", "collection": "notes", "id": name, "doc": map[string]any{"type": "note", "text": text}})
	}
	return "write", map[string]any{"ops": ops}
}

// memoryIngestArgs is server-memory's create_entities of notes [from, to).
func memoryIngestArgs(from, to int) (string, any) {
	entities := make([]map[string]any, 0, to-from)
	for i := from; i < to; i++ {
		name, text := agentNote(i)
		entities = append(entities, map[string]any{"name": name, "entityType": "note", "observations": []string{text}})
	}
	return "create_entities", map[string]any{"entities": entities}
}

func mcpkitSearchArgs(word string) (string, any) {
	return "search", map[string]any{"collection": "notes", "text": map[string]any{"query": word}}
}

func memorySearchArgs(word string) (string, any) {
	return "search_nodes", map[string]any{"query": word}
}

// agentStoreServer is a server of the notes jobs, started afresh each
// round.
type agentStoreServer struct {
	name    string
	start   func(dir string) *agentConn
	prepare func(*agentConn) // untimed, before the ingest
	ingest  func(from, to int) (tool string, args any)
	search  func(word string) (tool string, args any)
}

// run starts the server over a new file, ingests the notes and searches
// them, checking that each search found every note of its word.
func (s agentStoreServer) run(b *testing.B, round int) (ingest, search agentSample) {
	c := s.start(b.TempDir())
	defer c.cs.Close()
	if s.prepare != nil {
		s.prepare(c)
	}
	var calls []agentCall
	for from := 0; from < agentNotes; from += agentIngestBatch {
		tool, args := s.ingest(from, from+agentIngestBatch)
		calls = append(calls, marshalCall(b, tool, args))
	}
	ingest, _ = c.job(b, agentNotes, calls)

	calls = calls[:0]
	for q := range agentSearches {
		tool, args := s.search(topicWord((q*7 + round) % agentTopics)) // a spread of topics, another each round
		calls = append(calls, marshalCall(b, tool, args))
	}
	search, results := c.job(b, agentSearches, calls)
	for q, res := range results {
		t := (q*7 + round) % agentTopics
		var want []string
		for i := t; i < agentNotes; i += agentTopics {
			name, _ := agentNote(i)
			want = append(want, name)
		}
		got := resultJSON(b, res)
		if found := slices.Compact(slices.Sorted(slices.Values(noteName.FindAllString(got, -1)))); !slices.Equal(found, want) {
			b.Fatalf("%s: the search for %s found %v, want %v: %.500s", s.name, topicWord(t), found, want, got)
		}
	}
	return ingest, search
}

// noteName is a note's name (agentNote) in a result.
var noteName = regexp.MustCompile(`note-[0-9]{4}`)

// resultJSON is a result's content and structuredContent as JSON, for
// checks that hold whatever the result's shape.
func resultJSON(b *testing.B, res *mcp.CallToolResult) string {
	data, err := json.Marshal([]any{res.Content, res.StructuredContent})
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// agentRESPServer is a server of the Redis jobs, one process for every
// round.
type agentRESPServer struct {
	name  string
	conn  *agentConn
	batch bool // one call runs many commands (mcpkit's resp_execute)
}

// set is the calls that SET keys to values: one a call, or all in one call
// when the server batches.
func (s agentRESPServer) set(b *testing.B, keys, values []string) []agentCall {
	if s.batch {
		cmds := make([][]string, len(keys))
		for i := range keys {
			cmds[i] = []string{"SET", keys[i], values[i]}
		}
		return []agentCall{marshalCall(b, "resp_execute", map[string]any{"commands": cmds})}
	}
	calls := make([]agentCall, len(keys))
	for i := range keys {
		calls[i] = marshalCall(b, "set", map[string]any{"key": keys[i], "value": values[i]})
	}
	return calls
}

// get is the call that GETs key.
func (s agentRESPServer) get(b *testing.B, key string) agentCall {
	if s.batch {
		return marshalCall(b, "resp_execute", map[string]any{"commands": [][]string{{"GET", key}}})
	}
	return marshalCall(b, "get", map[string]any{"key": key})
}

// warmUp makes agentWarmupCalls untimed SET and GET calls.
func (s agentRESPServer) warmUp(b *testing.B, redis *resp.Conn) {
	for i := range agentWarmupCalls {
		key := fmt.Sprintf("warm:%d", i)
		for _, call := range s.set(b, []string{key}, []string{"w"}) {
			s.conn.call(b, call.tool, call.args)
		}
		call := s.get(b, key)
		s.conn.call(b, call.tool, call.args)
	}
	flushRedis(b, redis)
}

// run runs the Redis jobs on a flushed server: agentKeys SETs one call
// each, the GETs of those keys one call each (each result must hold the
// value), then agentBatches batches of agentBatchSize SETs; redis-server
// must hold every value SET.
func (s agentRESPServer) run(b *testing.B, redis *resp.Conn, round int) (set, get, batch agentSample) {
	flushRedis(b, redis)
	keys, values := agentKeyValues("key", agentKeys, round)
	var calls []agentCall
	for i := range keys {
		calls = append(calls, s.set(b, keys[i:i+1], values[i:i+1])...)
	}
	set, _ = s.conn.job(b, agentKeys, calls)
	checkRedis(b, s.name, redis, keys, values)

	calls = calls[:0]
	for _, key := range keys {
		calls = append(calls, s.get(b, key))
	}
	get, results := s.conn.job(b, agentKeys, calls)
	for i, res := range results {
		if got := resultJSON(b, res); !strings.Contains(got, values[i]) {
			b.Fatalf("%s: GET %s returned %.300s, without the value SET, %s", s.name, keys[i], got, values[i])
		}
	}

	flushRedis(b, redis)
	keys, values = agentKeyValues("batch", agentBatches*agentBatchSize, round)
	calls = calls[:0]
	for from := 0; from < len(keys); from += agentBatchSize {
		calls = append(calls, s.set(b, keys[from:from+agentBatchSize], values[from:from+agentBatchSize])...)
	}
	batch, _ = s.conn.job(b, len(keys), calls)
	checkRedis(b, s.name, redis, keys, values)
	return set, get, batch
}

// agentKeyValues are n keys and their values, the round in each value so
// that a stale one cannot pass for the one SET; no value holds another.
func agentKeyValues(prefix string, n, round int) (keys, values []string) {
	for i := range n {
		keys = append(keys, fmt.Sprintf("%s:%04d", prefix, i))
		values = append(values, fmt.Sprintf("value-%04d-round-%d-end", i, round))
	}
	return keys, values
}

// flushRedis empties redis-server.
func flushRedis(b *testing.B, redis *resp.Conn) {
	if v, err := redis.Do(b.Context(), []byte("FLUSHALL")); err != nil || v.IsError() {
		b.Fatalf("FLUSHALL: %v %s", err, v.Str)
	}
}

// checkRedis checks, over a direct connection, that redis-server holds
// each key with its value and nothing else.
func checkRedis(b *testing.B, server string, redis *resp.Conn, keys, values []string) {
	args := [][]byte{[]byte("MGET")}
	for _, k := range keys {
		args = append(args, []byte(k))
	}
	res, err := redis.Pipeline(b.Context(), [][][]byte{args, {[]byte("DBSIZE")}}, resp.PipelineOptions{})
	if err != nil {
		b.Fatalf("MGET: %v", err)
	}
	got := res.Replies[0].Elems
	if len(got) != len(keys) || res.Replies[1].Int != int64(len(keys)) {
		b.Fatalf("%s: redis-server holds %d keys, want %d", server, res.Replies[1].Int, len(keys))
	}
	for i, v := range got {
		if string(v.Str) != values[i] {
			b.Fatalf("%s: %s = %q in redis-server, want %q", server, keys[i], v.Str, values[i])
		}
	}
}

// TestAgentVerdicts holds BenchmarkAgent's judgement to its targets: each
// job against the fastest peer that does it, mcpkit no slower (the ingest
// twice as fast) and no more bytes; the median round; and the logged
// tables, which test/cmd/benchreport reads by their cells (text between
// runs of two spaces or more), one cell a column.
func TestAgentVerdicts(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	if got := agentMedian([]agentSample{{Took: ms(5)}, {Took: ms(1)}, {Took: ms(9)}, {Took: ms(3)}}); got.Took != ms(3) {
		t.Errorf("median of 5, 1, 9, 3 ms = %v, want 3ms", got.Took)
	}
	medians := map[string]map[string]agentSample{
		jobIngest: {"mcpkit": {Took: ms(60), Content: 100}, "server-memory": {Took: ms(100), Content: 400}},
		jobSearch: {"mcpkit": {Took: ms(50), Content: 90, Structured: 20}, "server-memory": {Took: ms(200), Content: 100}},
		jobSet: {"mcpkit": {Took: ms(30), Content: 10}, "server-redis": {Took: ms(40), Content: 50},
			"gongrzhe-redis": {Took: ms(35), Content: 5}},
		jobGet: {"mcpkit": {Took: ms(30)}},
	}
	verdicts := agentVerdicts(medians, "mcpkit")
	type want struct {
		job, peer string
		misses    int
	}
	var got []want
	for _, v := range verdicts {
		got = append(got, want{v.Job, v.Peer, len(v.Misses())})
	}
	// ingest: 1.67× (under 2×); search: 110 bytes against 100; set: the
	// fastest peer (gongrzhe-redis) returned fewer bytes, though the
	// other did not; get: no peer ran it.
	if w := []want{{jobIngest, "server-memory", 1}, {jobSearch, "server-memory", 1}, {jobSet, "gongrzhe-redis", 1}}; !slices.Equal(got, w) {
		t.Errorf("verdicts %v, want %v", got, w)
	}
	medians[jobIngest]["mcpkit"] = agentSample{Took: ms(50), Content: 400}
	if m := agentVerdicts(medians, "mcpkit")[0].Misses(); len(m) != 0 {
		t.Errorf("twice server-memory's rate, as many bytes: missed %v", m)
	}

	lines := strings.Split(agentTables(medians, []string{"mcpkit", "server-memory", "server-redis", "gongrzhe-redis"}, verdicts), "\n")
	cells := regexp.MustCompile(`\s{2,}`)
	width := 0
	for _, line := range lines {
		n := len(cells.Split(strings.TrimSpace(line), -1))
		switch {
		case strings.HasPrefix(line, "job"):
			width = n
		case n == 1: // the lines after each table
			width = 0
		case width == 0: // the first results
		case n != width:
			t.Errorf("%d cells where the header has %d: %q", n, width, line)
		}
	}
	if len(lines) != 1+8+1+1+3+1+8 { // eight rows: get has mcpkit alone
		t.Errorf("tables of %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
