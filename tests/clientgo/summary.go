package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

type summary struct {
	Mode   string         `json:"mode"`
	Tenant string         `json:"tenant,omitempty"`
	Run    string         `json:"run"`
	Kinds  []kindResult   `json:"kinds"`
	Totals map[string]int `json:"totals"` // outcome -> number of cells
}

func summarize(o options, rs []kindResult) summary {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Key < rs[j].Key })
	t := map[string]int{}
	for _, r := range rs {
		for _, c := range r.Cells {
			t[c.Outcome]++
		}
	}
	return summary{Mode: o.mode, Tenant: o.tenant, Run: o.run, Kinds: rs, Totals: t}
}

func printTable(w io.Writer, s summary) {
	fmt.Fprintf(w, "client-go (protobuf) over every creatable built-in kind, mode %s", s.Mode)
	if s.Tenant != "" {
		fmt.Fprintf(w, ", tenant %s", s.Tenant)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "KIND\tVERSION\t%s\n", strings.ToUpper(strings.Join(allVerbs, "\t")))
	for _, r := range s.Kinds {
		row := []string{r.Key, r.Version}
		for _, v := range allVerbs {
			c, set := r.Cells[v]
			switch {
			case !set:
				row = append(row, "-")
			case c.Outcome == fail:
				row = append(row, "FAIL")
			case c.Outcome == policy:
				row = append(row, fmt.Sprintf("policy %d", c.Code))
			default:
				row = append(row, c.Outcome)
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	keys := make([]string, 0, len(s.Totals))
	for k := range s.Totals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Totals[k]))
	}
	fmt.Fprintf(w, "cells: %s\n", strings.Join(parts, ", "))
	for _, r := range s.Kinds {
		for _, v := range allVerbs {
			c := r.Cells[v]
			if c.Outcome == fail || c.Outcome == policy {
				fmt.Fprintf(w, "  %s %s %s: %d %s %s\n", r.Key, v, c.Outcome, c.Code, c.Reason, c.Message)
			}
		}
	}
}
