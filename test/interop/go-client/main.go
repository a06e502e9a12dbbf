// The official Go MCP SDK client against a Tidemark endpoint, for the interop suite. Printing JSON
// lines: {"negotiated": "…"} and {"tools": [...]}; one {"progress": n} per notification;
// {"asked": message} per elicitation; then {"result": text, "isError": bool} or {"error": "…"}.
//
// Usage:
//
//	go-client handshake <url> <revision>
//	go-client call <url> <tool> <json-args> <revision|default>
//	go-client input <url>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// The SDK retires a response in its read loop but runs notification handlers on a goroutine of
// their own (internal/jsonrpc2 handleAsync), so the last progress may be handled after CallTool
// returned: a result is printed once the handler saw as many as the call's `to`, or after 2 s.
var progressed atomic.Int64

func connect(ctx context.Context, url, revision string) *mcp.ClientSession {
	client := mcp.NewClient(&mcp.Implementation{Name: "tidemark-go-interop", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			emit(map[string]any{"progress": req.Params.Progress})
			progressed.Add(1)
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			emit(map[string]any{"asked": req.Params.Message})
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
	})
	options := &mcp.ClientSessionOptions{}
	if revision != "default" {
		options.ProtocolVersion = revision
	}
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, options)
	if err != nil {
		fail(err)
	}
	return session
}

func negotiated(session *mcp.ClientSession, revision string) string {
	if init := session.InitializeResult(); init != nil {
		return init.ProtocolVersion
	}
	return revision
}

func call(ctx context.Context, session *mcp.ClientSession, tool string, args map[string]any) {
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken("go")
	result, err := session.CallTool(ctx, params)
	if err != nil {
		fail(err)
	}
	text := ""
	if len(result.Content) > 0 {
		if t, ok := result.Content[0].(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	if to, ok := args["to"].(float64); ok {
		for deadline := time.Now().Add(2 * time.Second); progressed.Load() < int64(to) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	emit(map[string]any{"result": text, "isError": result.IsError})
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go-client handshake|call|input <url> …")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mode, url := os.Args[1], os.Args[2]
	switch {
	case mode == "handshake" && len(os.Args) == 4:
		session := connect(ctx, url, os.Args[3])
		defer session.Close()
		emit(map[string]any{"negotiated": negotiated(session, os.Args[3])})
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			fail(err)
		}
		names := []string{}
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		emit(map[string]any{"tools": names})
	case mode == "call" && len(os.Args) == 6:
		var args map[string]any
		if err := json.Unmarshal([]byte(os.Args[4]), &args); err != nil {
			fail(err)
		}
		session := connect(ctx, url, os.Args[5])
		defer session.Close()
		call(ctx, session, os.Args[3], args)
	case mode == "input" && len(os.Args) == 3:
		session := connect(ctx, url, "default")
		defer session.Close()
		call(ctx, session, "confirm_deploy", map[string]any{"env": "staging"})
	default:
		fmt.Fprintln(os.Stderr, "usage: go-client handshake <url> <revision> | call <url> <tool> <json> <revision|default> | input <url>")
		os.Exit(2)
	}
}
