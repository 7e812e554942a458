package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

var samples = []string{"", "a", "ab", "AB", "bA", "a\nb", "b\n", "xyz:()*+", "12", "{1}", "Σσ", "_-,"}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := []map[string]any{}
	for in.Scan() {
		var p string
		if err := json.Unmarshal(in.Bytes(), &p); err != nil {
			panic(err)
		}
		re, err := regexp.Compile(p)
		row := map[string]any{"pattern": p, "error": nil}
		if err != nil {
			row["error"] = err.Error()
		} else {
			matched := []string{}
			for _, s := range samples {
				if re.MatchString(s) {
					matched = append(matched, s)
				}
			}
			row["matches"] = matched
		}
		out = append(out, row)
	}
	b, _ := json.MarshalIndent(out, "", " ")
	fmt.Println(string(b))
}
