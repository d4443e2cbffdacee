package accountant

// config holds what NewLedger and CalibrateNoise share. An invalid option is
// remembered in err and reported by the first call that needs the config,
// because Option functions cannot return errors.
type config struct {
	orders     []float64
	conversion Conversion
	// acct, if not nil, answers Epsilon, Delta and calibrations instead of
	// the RDP totals (set by WithAccountant with a non-RDP accountant).
	acct Accountant
	err  error
}

// Option configures a Ledger or a calibration.
type Option func(*config)

// WithOrders sets the Rényi orders over which ε is minimised. Orders must lie
// in (1, MaxOrder]; they are sorted and deduplicated. An invalid list
// makes the first Record, Epsilon or calibration return ErrInvalidParameter.
func WithOrders(orders []float64) Option {
	return func(c *config) {
		checked, err := checkOrders(orders)
		if err != nil {
			c.err = err
			return
		}
		c.orders = checked
	}
}

// WithConversion selects the RDP → (ε, δ) conversion (Balle by default).
func WithConversion(conv Conversion) Option {
	return func(c *config) {
		if !conv.valid() {
			c.err = conv.invalidError()
			return
		}
		c.conversion = conv
	}
}

func newConfig(opts []Option) config {
	c := config{orders: DefaultOrders(), conversion: Balle}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}
