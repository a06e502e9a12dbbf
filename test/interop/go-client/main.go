// The official Go MCP SDK client against a Tidemark endpoint, for the interop tests: it connects
// pinned to one protocol revision, lists the tools and calls count, printing JSON lines:
// {"negotiated": "…"}, {"tools": [...]}, one {"progress": n} per notification, then
// {"result": "…"} or {"error": "…"}.
//
// Usage: go-client <url> <revision> <to> <delay-ms>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func emit(event map[string]any) {
	line, _ := json.Marshal(event)
	fmt.Println(string(line))
}

func fail(err error) {
	emit(map[string]any{"error": err.Error()})
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: go-client <url> <revision> <to> <delay-ms>")
		os.Exit(2)
	}
	url, revision := os.Args[1], os.Args[2]
	to, _ := strconv.Atoi(os.Args[3])
	delay, _ := strconv.Atoi(os.Args[4])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The SDK retires a response in its read loop but runs notification handlers on a goroutine of
	// their own (internal/jsonrpc2 handleAsync), so the last progress may be handled after CallTool
	// returned: the result is printed once the handler saw `to` of them, or after two seconds.
	var progressed atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "tidemark-go-interop", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			emit(map[string]any{"progress": req.Params.Progress})
			progressed.Add(1)
		},
	})
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		fail(err)
	}
	defer session.Close()
	if init := session.InitializeResult(); init != nil {
		emit(map[string]any{"negotiated": init.ProtocolVersion})
	} else {
		emit(map[string]any{"negotiated": revision})
	}

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		fail(err)
	}
	names := []string{}
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	emit(map[string]any{"tools": names})

	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"to": to, "delayMs": delay}}
	params.SetProgressToken("go")
	result, err := session.CallTool(ctx, params)
	if err != nil {
		fail(err)
	}
	if len(result.Content) == 0 {
		fail(fmt.Errorf("empty result"))
	}
	text, ok := result.Content[0].(*mcp.TextContent)
	if !ok {
		fail(fmt.Errorf("not text: %T", result.Content[0]))
	}
	for deadline := time.Now().Add(2 * time.Second); progressed.Load() < int64(to) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	emit(map[string]any{"result": text.Text})
}
