package docs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A Row is one row of a checklist table: its line in the file and its cells by
// column name (the header's text, lower case).
type Row struct {
	Line  int
	Cells map[string]string
}

// The columns a checklist table must have.
const (
	ColumnRule     = "rule"
	ColumnStatus   = "status"
	ColumnProvedBy = "proved by"
)

// ParseChecklist returns the rows of every table in the markdown section whose
// heading is exactly heading (any level), up to the next heading of that level or
// higher. A table without the checklist's columns, or a row whose cell count is not
// the header's (an unescaped "|" in a cell), is an error rather than rows skipped:
// a check that reads nothing would pass.
func ParseChecklist(markdown, heading string) ([]Row, error) {
	lines := strings.Split(markdown, "\n")
	start, level := -1, 0
	for i, l := range lines {
		if h, n := headingOf(l); n > 0 && h == heading {
			start, level = i+1, n
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	var rows []Row
	tables := 0
	for i := start; i < len(lines); i++ {
		if _, n := headingOf(lines[i]); n > 0 && n <= level {
			break
		}
		if !isTableLine(lines[i]) {
			continue
		}
		end := i
		for end < len(lines) && isTableLine(lines[end]) {
			end++
		}
		tableRows, err := parseTable(lines[i:end], i+1)
		if err != nil {
			return nil, err
		}
		rows = append(rows, tableRows...)
		tables++
		i = end - 1
	}
	if tables == 0 {
		return nil, fmt.Errorf("no table under %q", heading)
	}
	return rows, nil
}

// headingOf returns a markdown heading's text and level (0 when l is no heading).
func headingOf(l string) (string, int) {
	n := len(l) - len(strings.TrimLeft(l, "#"))
	if n == 0 || n > 6 || !strings.HasPrefix(l[n:], " ") {
		return "", 0
	}
	return strings.TrimSpace(l[n:]), n
}

func isTableLine(l string) bool {
	return strings.HasPrefix(strings.TrimSpace(l), "|")
}

// parseTable reads one table: header, delimiter row, body rows. firstLine is the
// header's line number (1-based), for messages.
func parseTable(lines []string, firstLine int) ([]Row, error) {
	if len(lines) < 2 {
		return nil, fmt.Errorf("line %d: a table without a delimiter row", firstLine)
	}
	header := splitCells(lines[0])
	for i := range header {
		header[i] = strings.ToLower(header[i])
	}
	for _, want := range []string{ColumnRule, ColumnStatus, ColumnProvedBy} {
		if !slices.Contains(header, want) {
			return nil, fmt.Errorf("line %d: the table has no column %q (columns %q)", firstLine, want, header)
		}
	}
	if d := splitCells(lines[1]); len(d) != len(header) || strings.Trim(strings.Join(d, ""), "-: ") != "" {
		return nil, fmt.Errorf("line %d: the row after the header is not a delimiter row", firstLine+1)
	}
	var rows []Row
	var errs []error
	for i, l := range lines[2:] {
		line := firstLine + 2 + i
		cells := splitCells(l)
		if len(cells) != len(header) {
			errs = append(errs, fmt.Errorf("line %d: %d cells, the header has %d", line, len(cells), len(header)))
			continue
		}
		row := Row{Line: line, Cells: map[string]string{}}
		for j, c := range cells {
			row.Cells[header[j]] = c
		}
		rows = append(rows, row)
	}
	return rows, errors.Join(errs...)
}

// splitCells splits a table line on the "|" that are not escaped as "\|", as GitHub
// does (inside code spans too), and trims each cell.
func splitCells(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}
