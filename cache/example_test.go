package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/focusgate/focusgate/cache"
)

func ExampleCache_Fetch() {
	c := cache.New(cache.NewMemory(64<<20, 24*time.Hour), nil)
	key := cache.Key("v1", "gpt-4.1-mini", "line", "Buy the cheapest laptop", "[12] button 'Add to cart'")
	retrieve := func(context.Context) ([]byte, error) {
		return []byte(`[[1,3],[20,25]]`), nil // the retriever's selection
	}
	for range 2 {
		sel, outcome, err := c.Fetch(context.Background(), key, retrieve)
		fmt.Println(string(sel), outcome, err)
	}
	// Output:
	// [[1,3],[20,25]] miss <nil>
	// [[1,3],[20,25]] hit <nil>
}
