// kstatus: what Flux's health check (kstatus, status.Compute) answers for each object given.
// Reads objects as JSON, one per line, on stdin (as the API server serves them); writes one JSON
// line per object:
// {"status": "<Status>", "message": "<Message>"}, or {"error": "..."} when Compute refuses it.
// Exit status: 0 every line read, 2 a line that is not a JSON object.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

type answer struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	line := 0
	for in.Scan() {
		line++
		obj := map[string]any{}
		// as the API machinery decodes objects: whole numbers as int64, which Compute reads
		if err := utiljson.Unmarshal(in.Bytes(), &obj); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: line %d: not a JSON object: %v\n", line, err)
			os.Exit(2)
		}
		var a answer
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Status, a.Message = res.Status.String(), res.Message
		}
		if err := out.Encode(a); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: reading stdin: %v\n", err)
		os.Exit(2)
	}
}
