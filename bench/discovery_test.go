package main

import (
	"encoding/json"
	"os"
	"testing"
)

func TestCatalogIsAServerList(t *testing.T) {
	var servers []struct {
		Name     string `json:"name"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
		} `json:"packages"`
	}
	if err := json.Unmarshal([]byte(catalogJSON), &servers); err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || servers[0].Packages[0].Identifier+":dev" != mathImage {
		t.Fatalf("catalog = %+v, want one server packaging %s", servers, mathImage)
	}
}

func TestProcReaders(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("readRSS = %d, %v", rss, err)
	}
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatalf("readCPU: %v", err)
	}
}
