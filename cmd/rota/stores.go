package main

// The stores --store can name: each package registers its URL schemes with storeurl. A new
// store is one more import here.
import (
	_ "github.com/rotahq/rota/internal/storeurl/postgresurl"
	_ "github.com/rotahq/rota/internal/storeurl/redisurl"
	_ "github.com/rotahq/rota/internal/storeurl/sqliteurl"
)
