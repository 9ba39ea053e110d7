// auditcheck reads JSON-lines audit logs and decodes every line, strictly (unknown fields are
// an error), into kube-apiserver's own audit.k8s.io/v1 Event type; it prints the decoded
// events as one JSON array. The e2e test (tests/fairshare... audit) checks their content.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func main() {
	var events []auditv1.Event
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			var ev auditv1.Event
			if err := dec.Decode(&ev); err != nil {
				fmt.Fprintf(os.Stderr, "%s:%d: not an audit.k8s.io/v1 Event: %v\n", path, line, err)
				os.Exit(1)
			}
			if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
				fmt.Fprintf(os.Stderr, "%s:%d: apiVersion/kind %q/%q\n", path, line, ev.APIVersion, ev.Kind)
				os.Exit(1)
			}
			events = append(events, ev)
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		f.Close()
	}
	if err := json.NewEncoder(os.Stdout).Encode(events); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
