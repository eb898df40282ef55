//go:build !race

package toolsearch

const raceSlowdown = 1
