// Northwind Goods catalogue. Static, deterministic data.
var NW_CATEGORIES = [
  { id: "kitchen", name: "Kitchen", blurb: "Cookware, mugs and coffee gear" },
  { id: "home", name: "Home", blurb: "Textiles, candles and lighting" },
  { id: "outdoor", name: "Outdoor", blurb: "Packs, bottles and camp kit" },
  { id: "electronics", name: "Electronics", blurb: "Audio, charging and keyboards" },
  { id: "office", name: "Office", blurb: "Notebooks, pens and desk tools" },
  { id: "apparel", name: "Apparel", blurb: "Layers, hats and socks" }
];

var NW_PRODUCTS = [
  { id: "blue-ceramic-mug", name: "Blue Ceramic Mug", category: "kitchen", brand: "Harbor & Clay", price: 12.50, rating: 4.6, reviews: 214, stock: 48, featured: true, color: "#2f5fa8",
    description: "A sturdy stoneware mug with a glossy cobalt glaze. Holds a generous 350 ml and keeps its colour through years of dishwasher cycles.",
    specs: [["Material", "Stoneware"], ["Capacity", "350 ml"], ["Colour", "Cobalt blue"], ["Dishwasher safe", "Yes"], ["Weight", "0.38 kg"]] },
  { id: "cast-iron-skillet", name: "Cast Iron Skillet 26 cm", category: "kitchen", brand: "Ironvale", price: 39.00, rating: 4.8, reviews: 532, stock: 17, featured: true, color: "#3b3b3b",
    description: "Pre-seasoned cast iron that goes from hob to oven. Even heat for searing, baking and shallow frying.",
    specs: [["Material", "Pre-seasoned cast iron"], ["Diameter", "26 cm"], ["Weight", "2.4 kg"], ["Oven safe", "Up to 260 °C"], ["Induction compatible", "Yes"]] },
  { id: "bamboo-cutting-board", name: "Bamboo Cutting Board", category: "kitchen", brand: "Greenleaf", price: 18.75, rating: 4.3, reviews: 96, stock: 0, color: "#c9a45c",
    description: "A thick end-grain bamboo board with a juice groove on one side and a flat serving face on the other.",
    specs: [["Material", "Bamboo"], ["Dimensions", "40 × 28 × 2 cm"], ["Weight", "1.1 kg"], ["Juice groove", "Yes"], ["Dishwasher safe", "No"]] },
  { id: "pour-over-coffee-set", name: "Pour-Over Coffee Set", category: "kitchen", brand: "Harbor & Clay", price: 34.90, rating: 4.5, reviews: 148, stock: 9, color: "#8a5a3b",
    description: "A borosilicate carafe with a reusable stainless steel filter. Brews up to four cups of clean, bright coffee.",
    specs: [["Material", "Borosilicate glass"], ["Capacity", "600 ml"], ["Filter", "Stainless steel mesh"], ["Dishwasher safe", "Carafe only"], ["Weight", "0.52 kg"]] },

  { id: "linen-throw-pillow", name: "Linen Throw Pillow", category: "home", brand: "Loomhouse", price: 22.00, rating: 4.2, reviews: 77, stock: 31, color: "#8fa68a",
    description: "Stonewashed linen cover with a feather-blend insert. Soft from day one and softer with every wash.",
    specs: [["Material", "100% linen cover"], ["Dimensions", "45 × 45 cm"], ["Colour", "Sage green"], ["Insert", "Feather blend"], ["Care", "Machine wash 40 °C"]] },
  { id: "merino-wool-blanket", name: "Merino Wool Blanket", category: "home", brand: "Loomhouse", price: 89.00, rating: 4.7, reviews: 203, stock: 6, featured: true, color: "#4a4a52",
    description: "A heavyweight merino throw woven in a classic herringbone. Warm, breathable and naturally odour resistant.",
    specs: [["Material", "100% merino wool"], ["Dimensions", "150 × 200 cm"], ["Colour", "Charcoal"], ["Weight", "1.6 kg"], ["Care", "Dry clean or hand wash"]] },
  { id: "soy-candle-trio", name: "Soy Candle Trio", category: "home", brand: "Wickford", price: 24.50, rating: 4.4, reviews: 189, stock: 54, color: "#d9b98c",
    description: "Three hand-poured soy wax candles in amber glass: Cedar, Fig and Sea Salt.",
    specs: [["Wax", "Soy"], ["Burn time", "3 × 30 hours"], ["Scents", "Cedar, Fig, Sea salt"], ["Jar", "Amber glass"], ["Weight", "0.9 kg"]] },
  { id: "arc-desk-lamp", name: "Arc Desk Lamp", category: "home", brand: "Lumio", price: 46.00, rating: 4.1, reviews: 65, stock: 0, color: "#222222",
    description: "A slim arched lamp with a dimmable warm-white LED and a weighted steel base.",
    specs: [["Bulb", "Integrated LED, 8 W"], ["Height", "48 cm"], ["Colour", "Matte black"], ["Dimmable", "Yes"], ["Cable length", "1.8 m"]] },

  { id: "trail-backpack-28l", name: "Trail Backpack 28L", category: "outdoor", brand: "Ridgeway", price: 64.00, rating: 4.6, reviews: 341, stock: 22, featured: true, color: "#2e5e3e",
    description: "A day pack with a ventilated back panel, hip belt pockets and a stowable rain cover.",
    specs: [["Capacity", "28 L"], ["Weight", "0.95 kg"], ["Water resistance", "Water-resistant, rain cover included"], ["Colour", "Forest green"], ["Laptop sleeve", "Up to 15 inch"]] },
  { id: "insulated-water-bottle", name: "Insulated Water Bottle 750 ml", category: "outdoor", brand: "Ridgeway", price: 21.00, rating: 4.7, reviews: 612, stock: 120, color: "#3f8fb0",
    description: "Double-walled stainless steel keeps drinks cold for 24 hours or hot for 12.",
    specs: [["Capacity", "750 ml"], ["Material", "18/8 stainless steel"], ["Keeps cold", "24 hours"], ["Keeps hot", "12 hours"], ["Weight", "0.41 kg"]] },
  { id: "camping-hammock", name: "Camping Hammock", category: "outdoor", brand: "Canopy Co.", price: 38.50, rating: 4.3, reviews: 118, stock: 13, color: "#d07a2e",
    description: "Parachute nylon hammock with tree straps and carabiners. Packs down to the size of a grapefruit.",
    specs: [["Material", "Parachute nylon"], ["Length", "2.8 m"], ["Max load", "200 kg"], ["Weight", "0.6 kg"], ["Straps included", "Yes"]] },
  { id: "led-headlamp", name: "LED Headlamp 300 lm", category: "outdoor", brand: "Lumio", price: 16.90, rating: 4.0, reviews: 287, stock: 0, color: "#e0b100",
    description: "A rechargeable headlamp with red night mode and a tilting head.",
    specs: [["Brightness", "300 lumens"], ["Battery", "Rechargeable, 1200 mAh"], ["Runtime", "40 hours (low)"], ["Water resistance", "IPX4"], ["Weight", "0.08 kg"]] },

  { id: "wireless-earbuds", name: "Wireless Earbuds Pro", category: "electronics", brand: "Sonant", price: 79.00, rating: 4.4, reviews: 905, stock: 35, featured: true, color: "#f2f2f2",
    description: "Active noise cancelling earbuds with a pocketable charging case and multipoint pairing.",
    specs: [["Battery", "8 hours (+24 hours with case)"], ["Bluetooth", "5.3"], ["Noise cancelling", "Yes"], ["Water resistance", "IPX4"], ["Weight", "0.05 kg"]] },
  { id: "pebble-speaker", name: "Pebble Bluetooth Speaker", category: "electronics", brand: "Sonant", price: 49.00, rating: 4.5, reviews: 440, stock: 12, color: "#c2523c",
    description: "A rounded 10 W speaker that floats, survives drops and plays for 14 hours.",
    specs: [["Output", "10 W"], ["Battery", "14 hours"], ["Water resistance", "IPX7"], ["Bluetooth", "5.1"], ["Weight", "0.45 kg"]] },
  { id: "usb-c-charger-65w", name: "USB-C Charger 65 W", category: "electronics", brand: "Voltra", price: 29.99, rating: 4.6, reviews: 378, stock: 64, color: "#ffffff",
    description: "A compact GaN charger that powers a laptop, phone and earbuds at the same time.",
    specs: [["Output", "65 W max"], ["Ports", "2 × USB-C, 1 × USB-A"], ["Technology", "GaN"], ["Plug", "Foldable"], ["Weight", "0.12 kg"]] },
  { id: "mechanical-keyboard", name: "Mechanical Keyboard TKL", category: "electronics", brand: "Keyforge", price: 94.50, rating: 4.7, reviews: 256, stock: 4, color: "#555a66",
    description: "A tenkeyless board with tactile brown switches, PBT keycaps and wired or wireless use.",
    specs: [["Switches", "Brown tactile"], ["Layout", "Tenkeyless (87 keys)"], ["Connection", "USB-C / Bluetooth"], ["Keycaps", "PBT"], ["Weight", "0.98 kg"]] },

  { id: "dot-grid-notebook", name: "Dot Grid Notebook A5", category: "office", brand: "Paperlane", price: 9.80, rating: 4.8, reviews: 731, stock: 200, color: "#1f3b5a",
    description: "Lay-flat A5 notebook with 100 gsm paper that handles fountain pen ink without bleed.",
    specs: [["Size", "A5"], ["Pages", "192"], ["Paper", "100 gsm"], ["Ruling", "Dot grid, 5 mm"], ["Cover", "Hard cover"]] },
  { id: "brass-fountain-pen", name: "Brass Fountain Pen", category: "office", brand: "Paperlane", price: 42.00, rating: 4.5, reviews: 132, stock: 8, featured: true, color: "#b08d3c",
    description: "A solid brass pen that develops a warm patina. Takes standard international cartridges.",
    specs: [["Material", "Solid brass"], ["Nib", "Medium, steel"], ["Filling", "International cartridge / converter"], ["Length", "13.6 cm"], ["Weight", "0.04 kg"]] },
  { id: "walnut-monitor-stand", name: "Walnut Monitor Stand", category: "office", brand: "Oakline", price: 58.00, rating: 4.3, reviews: 84, stock: 0, color: "#6b4226",
    description: "Solid walnut riser that lifts your screen to eye level and clears space for a keyboard underneath.",
    specs: [["Material", "Solid walnut"], ["Dimensions", "60 × 22 × 10 cm"], ["Max load", "20 kg"], ["Finish", "Natural oil"], ["Weight", "2.1 kg"]] },
  { id: "felt-desk-organizer", name: "Felt Desk Organizer", category: "office", brand: "Oakline", price: 19.50, rating: 4.1, reviews: 58, stock: 27, color: "#8c8c8c",
    description: "Five compartments of thick wool felt for pens, cables and notes.",
    specs: [["Material", "Wool felt"], ["Compartments", "5"], ["Colour", "Grey"], ["Dimensions", "30 × 12 × 10 cm"], ["Weight", "0.3 kg"]] },

  { id: "merino-beanie", name: "Merino Beanie", category: "apparel", brand: "Loomhouse", price: 24.00, rating: 4.6, reviews: 167, stock: 40, color: "#c28a2c",
    options: { label: "Colour", values: ["Charcoal", "Mustard", "Navy"] },
    description: "A ribbed beanie knitted from fine merino. Warm without the itch.",
    specs: [["Material", "100% merino wool"], ["Size", "One size"], ["Colours", "Charcoal, Mustard, Navy"], ["Care", "Hand wash"], ["Weight", "0.07 kg"]] },
  { id: "packable-rain-jacket", name: "Packable Rain Jacket", category: "apparel", brand: "Ridgeway", price: 119.00, rating: 4.4, reviews: 221, stock: 11, featured: true, color: "#2a6f97",
    options: { label: "Size", values: ["S", "M", "L", "XL"] },
    description: "A 2.5-layer waterproof shell that stuffs into its own chest pocket.",
    specs: [["Waterproof rating", "10,000 mm"], ["Breathability", "10,000 g/m²"], ["Weight", "310 g"], ["Sizes", "S, M, L, XL"], ["Colour", "Lake blue"]] },
  { id: "canvas-tote-bag", name: "Canvas Tote Bag", category: "apparel", brand: "Harbor & Clay", price: 15.00, rating: 4.2, reviews: 93, stock: 75, color: "#e8dcc0",
    description: "Heavy cotton canvas tote with an inside pocket and long shoulder straps.",
    specs: [["Material", "12 oz cotton canvas"], ["Capacity", "18 L"], ["Dimensions", "42 × 38 × 12 cm"], ["Inside pocket", "Yes"], ["Weight", "0.35 kg"]] },
  { id: "hiking-socks", name: "Hiking Socks (2 pack)", category: "apparel", brand: "Ridgeway", price: 14.50, rating: 4.5, reviews: 388, stock: 150, color: "#7a5c8f",
    options: { label: "Size", values: ["S/M", "L/XL"] },
    description: "Cushioned merino-blend socks with a reinforced heel and toe. Two pairs per pack.",
    specs: [["Material", "60% merino, 38% nylon, 2% elastane"], ["Cushioning", "Medium"], ["Sizes", "S/M, L/XL"], ["Pairs", "2"], ["Care", "Machine wash 30 °C"]] }
];

var NW_SHIPPING = [
  { id: "standard", name: "Standard", price: 4.99, eta: "3–5 business days", note: "Free on orders of $75 or more" },
  { id: "express", name: "Express", price: 14.99, eta: "1–2 business days", note: "" },
  { id: "pickup", name: "Store pickup", price: 0, eta: "Ready in 2 hours", note: "Collect from our Harbour Street store" }
];

var NW_FREE_SHIPPING_THRESHOLD = 75;

var NW_PROMOS = { "WELCOME10": { percent: 10, label: "10% off your first order" } };

var NW_COUNTRIES = ["United Kingdom", "Ireland", "France", "Germany", "Netherlands", "Belgium", "Spain", "Portugal", "Italy", "Denmark", "Sweden", "Norway", "Poland", "United States", "Canada"];
