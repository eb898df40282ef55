package dashboard

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/readmodel"
)

// Charts are drawn here, as SVG in the page's HTML: no script draws them
// and no style attribute is needed (colours come from app.css through
// classes), so the strict CSP holds. A chart spans the last
// readmodel.TrafficWindow, now at its right edge.

// Chart geometry, in the SVG's user units.
const (
	chartW, chartH       = 600, 150
	plotL, plotR         = 52, 592
	plotT, plotB         = 10, 128
	sparkW, sparkH       = 120, 26
	sparkPad       int64 = 2
)

// chart is one drawn chart.
type chart struct {
	Title string
	// Label describes the chart for screen readers (its <title>).
	Label  string
	Series []series
	// YMax is the top of the y axis, YUnit its unit.
	YMax, YMid string
	YUnit      string
	// Empty says why nothing is drawn.
	Empty string
}

// series is one line of a chart.
type series struct {
	Name, Class string
	// Lines are polylines' points ("x,y x,y …"): a series has a gap
	// where a step has no value (no call, no latency).
	Lines []string
	// Areas are the polygons under the lines, when the series is filled.
	Areas []string
	// Last is the newest value, as the legend shows it.
	Last string
}

// trafficView is the data of a traffic fragment.
type trafficView struct {
	ID     string // "" for the servers page's sum
	Charts []chart
	// Points, Calls and Errors sum what is drawn (tests and the page's
	// own checks read them from data- attributes).
	Points        int
	Calls, Errors int64
	Step          time.Duration
}

// trafficCharts draws t: calls and errors per second, and, for one
// server, the p50 and p99 latency.
func trafficCharts(id string, t *readmodel.Traffic, step time.Duration, now time.Time, latency bool) trafficView {
	v := trafficView{ID: id, Step: step}
	if t != nil {
		v.Points = len(t.Points)
		for _, p := range t.Points {
			v.Calls += p.Calls
			v.Errors += p.Errors
		}
	}
	empty := ""
	if v.Calls == 0 {
		empty = "No calls in the last 15 minutes."
	}
	perSec := func(f func(readmodel.TrafficPoint) int64) func(readmodel.TrafficPoint) (float64, bool) {
		return func(p readmodel.TrafficPoint) (float64, bool) { return t.PerSecond(f(p)), true }
	}
	callsPS := perSec(func(p readmodel.TrafficPoint) int64 { return p.Calls })
	errorsPS := perSec(func(p readmodel.TrafficPoint) int64 { return p.Errors })
	if !latency {
		// The servers page: calls and errors of many servers, side by side.
		ymax := niceCeil(maxOf(t, callsPS))
		calls := chart{Title: "Calls per second", Label: "calls per second over the last 15 minutes", YUnit: "/s", Empty: empty,
			YMax: axisLabel(ymax), YMid: axisLabel(ymax / 2), Series: []series{draw(t, now, ymax, "calls", "calls", callsPS, true)}}
		emax := niceCeil(maxOf(t, errorsPS))
		errs := chart{Title: "Errors per second", Label: "errors per second over the last 15 minutes", YUnit: "/s", Empty: empty,
			YMax: axisLabel(emax), YMid: axisLabel(emax / 2), Series: []series{draw(t, now, emax, "errors", "errors", errorsPS, false)}}
		v.Charts = append(v.Charts, calls, errs)
		return v
	}
	calls := chart{Title: "Calls per second", Label: "calls and errors per second over the last 15 minutes", YUnit: "/s", Empty: empty}
	ymax := niceCeil(maxOf(t, callsPS))
	calls.YMax, calls.YMid = axisLabel(ymax), axisLabel(ymax/2)
	calls.Series = []series{draw(t, now, ymax, "calls", "calls", callsPS, true), draw(t, now, ymax, "errors", "errors", errorsPS, false)}
	v.Charts = append(v.Charts, calls)
	ms := func(f func(readmodel.TrafficPoint) float64) func(readmodel.TrafficPoint) (float64, bool) {
		return func(p readmodel.TrafficPoint) (float64, bool) { return f(p), p.Calls > 0 }
	}
	p50 := ms(func(p readmodel.TrafficPoint) float64 { return p.P50Ms })
	p99 := ms(func(p readmodel.TrafficPoint) float64 { return p.P99Ms })
	lat := chart{Title: "Latency", Label: "median and 99th percentile call duration over the last 15 minutes", Empty: empty}
	lmax := niceCeil(maxOf(t, p99))
	lat.YMax, lat.YMid = msLabel(lmax), msLabel(lmax/2)
	lat.Series = []series{draw(t, now, lmax, "p50", "p50", p50, false), draw(t, now, lmax, "p99", "p99", p99, false)}
	v.Charts = append(v.Charts, lat)
	return v
}

func maxOf(t *readmodel.Traffic, f func(readmodel.TrafficPoint) (float64, bool)) float64 {
	m := 0.0
	if t == nil {
		return m
	}
	for _, p := range t.Points {
		if v, ok := f(p); ok && v > m {
			m = v
		}
	}
	return m
}

// draw is one series of t scaled to ymax, the window ending at now.
func draw(t *readmodel.Traffic, now time.Time, ymax float64, name, class string, f func(readmodel.TrafficPoint) (float64, bool), fill bool) series {
	s := series{Name: name, Class: class, Last: "—"}
	if t == nil || len(t.Points) == 0 {
		return s
	}
	start := now.Add(-readmodel.TrafficWindow)
	var line []string
	var first, last string
	flush := func() {
		if len(line) == 1 {
			// One point alone: a short dash, or nothing would be drawn.
			x, y, _ := strings.Cut(line[0], ",")
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				line = []string{strconv.FormatFloat(f-3, 'f', 1, 64) + "," + y, line[0]}
				first = line[0]
			}
		}
		if len(line) > 0 {
			s.Lines = append(s.Lines, strings.Join(line, " "))
			if fill {
				s.Areas = append(s.Areas, fmt.Sprintf("%s,%d %s %s,%d", strings.Split(first, ",")[0], plotB, strings.Join(line, " "), strings.Split(last, ",")[0], plotB))
			}
		}
		line = nil
	}
	for _, p := range t.Points {
		if p.At.Before(start) {
			continue
		}
		v, ok := f(p)
		if !ok {
			flush()
			continue
		}
		x := plotL + float64(plotR-plotL)*p.At.Sub(start).Seconds()/readmodel.TrafficWindow.Seconds()
		y := float64(plotB)
		if ymax > 0 {
			y -= float64(plotB-plotT) * math.Min(v, ymax) / ymax
		}
		pt := strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64)
		if len(line) == 0 {
			first = pt
		}
		last = pt
		line = append(line, pt)
		s.Last = axisLabel(v)
	}
	flush()
	return s
}

// sparkline is a row's small chart of one value over the window.
type sparkline struct {
	Line  string
	Class string
	Label string // its <title>: the newest value and the peak
}

// spark draws f of t over the window ending at now, scaled to its own
// peak; nothing when t has no point.
func spark(t *readmodel.Traffic, now time.Time, class, unit string, f func(readmodel.TrafficPoint) (float64, bool)) sparkline {
	s := sparkline{Class: class, Label: "no calls in 15 minutes"}
	if t == nil || len(t.Points) == 0 {
		return s
	}
	peak := maxOf(t, f)
	start := now.Add(-readmodel.TrafficWindow)
	var pts []string
	var newest float64
	for _, p := range t.Points {
		v, ok := f(p)
		if !ok || p.At.Before(start) {
			continue
		}
		x := float64(sparkPad) + float64(sparkW-2*sparkPad)*p.At.Sub(start).Seconds()/readmodel.TrafficWindow.Seconds()
		y := float64(sparkH - sparkPad)
		if peak > 0 {
			y -= float64(sparkH-2*sparkPad) * v / peak
		}
		pts = append(pts, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
		newest = v
	}
	if len(pts) == 1 { // one point alone: a short dash
		x, y, _ := strings.Cut(pts[0], ",")
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			pts = append([]string{strconv.FormatFloat(f-3, 'f', 1, 64) + "," + y}, pts...)
		}
	}
	s.Line = strings.Join(pts, " ")
	if len(pts) > 0 {
		s.Label = fmt.Sprintf("now %s%s, peak %s%s over 15 minutes", axisLabel(newest), unit, axisLabel(peak), unit)
	}
	return s
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at least v (1 for none).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// msLabel writes milliseconds as ms, or as seconds from one up.
func msLabel(ms float64) string {
	if ms >= 1000 {
		return axisLabel(ms/1000) + "s"
	}
	return axisLabel(ms) + "ms"
}

// axisLabel writes a value with at most three significant digits.
func axisLabel(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case v >= 10:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
