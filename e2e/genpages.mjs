// Writes the local test pages in pages/: a shop product page, a checkout form
// and a long list. They are deterministic and large (hundreds of elements) so
// that every tool's accessibility tree is thousands of tokens, like a real shop.
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = join(dirname(fileURLToPath(import.meta.url)), "pages");
mkdirSync(dir, { recursive: true });

const words = ["Alpine", "Harbor", "Summit", "Cedar", "Nova", "Drift", "Ember", "Glacier", "Meadow", "Pioneer", "Quartz", "Ridge", "Solstice", "Tundra", "Willow", "Zephyr"];
const things = ["Jacket", "Boot", "Backpack", "Tent", "Lantern", "Bottle", "Glove", "Scarf", "Helmet", "Compass", "Stove", "Hammock"];
const name = (i) => `${words[i % words.length]} ${things[(i * 7) % things.length]} ${100 + i}`;
const price = (i) => (19 + ((i * 37) % 280) + 0.99).toFixed(2);

function nav() {
  const cats = [];
  for (let i = 0; i < 36; i++) cats.push(`<li><a href="/list.html?c=${i}">${words[i % 16]} ${things[i % 12]}s</a></li>`);
  return `<header><a href="/">Trailhead Outfitters</a>
<form role="search" action="/list.html"><label for="q">Search products</label><input id="q" name="q" type="search" placeholder="Search 4,000 products"><button type="submit">Search</button></form>
<nav aria-label="Categories"><ul>${cats.join("\n")}</ul></nav>
<a href="/account">Account</a> <a href="/cart">Cart (<span id="cartcount">0</span>)</a></header>`;
}

function footer() {
  const cols = [];
  for (let c = 0; c < 5; c++) {
    const links = [];
    for (let i = 0; i < 12; i++) links.push(`<li><a href="/help/${c}/${i}">${words[(c + i) % 16]} help topic ${i + 1}</a></li>`);
    cols.push(`<section><h3>Footer column ${c + 1}</h3><ul>${links.join("")}</ul></section>`);
  }
  return `<footer>${cols.join("\n")}<p>© 2026 Trailhead Outfitters. All prices include VAT.</p></footer>`;
}

function page(title, body, script = "") {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body>${nav()}
<main>${body}</main>
${footer()}
<script>${script}</script></body></html>
`;
}

// shop.html: one product with options, an "Add to cart" button, specs, reviews, related products.
{
  const specs = [];
  for (let i = 0; i < 30; i++) specs.push(`<tr><th scope="row">Spec ${i + 1} ${words[i % 16]}</th><td>${(i * 13) % 97} units, ${things[i % 12].toLowerCase()} grade</td></tr>`);
  const reviews = [];
  for (let i = 0; i < 40; i++) reviews.push(`<article><h4>${words[(i * 3) % 16]} review by user${i}</h4><p>Rated ${1 + (i % 5)} of 5. The ${things[i % 12].toLowerCase()} held up on a ${2 + (i % 9)}-day trip; zips and seams fine.</p><button type="button">Helpful (${i * 2})</button><button type="button">Report review ${i + 1}</button></article>`);
  const related = [];
  for (let i = 0; i < 30; i++) related.push(`<li><a href="/product/${i}">${name(i)}</a> <span>$${price(i)}</span> <button type="button">Quick view ${name(i)}</button></li>`);
  const body = `<nav aria-label="Breadcrumb"><a href="/">Home</a> › <a href="/list.html">Jackets</a> › <span>Summit Parka 2000</span></nav>
<h1>Summit Parka 2000</h1>
<p>$249.00 <s>$319.00</s> In stock, ships in 2 days.</p>
<form id="buy" onsubmit="return false">
<fieldset><legend>Colour</legend>${["Graphite", "Glacier Blue", "Ember Red", "Moss"].map((c, i) => `<label><input type="radio" name="colour" value="${c}"${i ? "" : " checked"}>${c}</label>`).join("")}</fieldset>
<label for="size">Size</label><select id="size">${["XS", "S", "M", "L", "XL", "XXL"].map((s) => `<option>${s}</option>`).join("")}</select>
<label for="qty">Quantity</label><input id="qty" type="number" value="1" min="1">
<button id="add" type="button" onclick="document.getElementById('cartcount').textContent=String(Number(document.getElementById('cartcount').textContent)+1);document.getElementById('status').textContent='Added Summit Parka 2000 to your cart'">Add to cart</button>
<button type="button">Add to wish list</button>
<button type="button" aria-label="Compare">Compare: add to list</button>
<p>Delivery: <b>Tue 25 Nov</b>, free over $100. <a href="/returns">Returns: 30 days</a></p>
<p role="status" id="status"></p>
</form>
<address>Trailhead Outfitters<br>1 Ridge Road<br>Denver, CO 80202</address>
<section><h2>Description</h2><p>A waterproof down parka for winter walks. Recycled shell, 700-fill down, two-way zip, helmet-compatible hood.</p></section>
<section><h2>Specifications</h2><table>${specs.join("\n")}</table></section>
<section><h2>Reviews</h2>${reviews.join("\n")}</section>
<section><h2>Related products</h2><ul>${related.join("\n")}</ul></section>`;
  writeFileSync(join(dir, "shop.html"), page("Summit Parka 2000 – Trailhead Outfitters", body));
}

// form.html: a checkout form with many fields.
{
  const fields = ["First name", "Last name", "Email", "Phone", "Company", "Street address", "Apartment", "City", "Postcode", "Region", "Country", "Delivery notes", "Gift message", "Promo code", "VAT number"];
  const rows = fields.map((f, i) => `<div><label for="f${i}">${f}</label><input id="f${i}" name="f${i}" type="text" autocomplete="off"></div>`);
  const extras = [];
  for (let i = 0; i < 40; i++) extras.push(`<label><input type="checkbox" name="opt${i}">Add ${words[i % 16]} ${things[i % 12].toLowerCase()} care kit (+$${(i % 9) + 1}.00)</label>`);
  const shipping = ["Standard", "Express", "Next day", "Pick up in store"].map((s, i) => `<label><input type="radio" name="ship"${i ? "" : " checked"}>${s}</label>`).join("");
  const body = `<h1>Checkout</h1><form id="checkout" onsubmit="document.getElementById('done').textContent='Order placed';return false">
<fieldset><legend>Contact and address</legend>${rows.join("\n")}</fieldset>
<fieldset><legend>Shipping</legend>${shipping}</fieldset>
<fieldset><legend>Extras</legend>${extras.join("\n")}</fieldset>
<label><input type="checkbox" name="terms">I accept the terms and conditions</label>
<button type="submit">Place order</button></form><p role="status" id="done"></p>`;
  writeFileSync(join(dir, "form.html"), page("Checkout – Trailhead Outfitters", body));
}

// list.html: 250 products with links and buttons, and pagination.
{
  const items = [];
  for (let i = 0; i < 250; i++) items.push(`<li><a href="/product/${i}">${name(i)}</a> <span>$${price(i)}</span> <span>${1 + (i % 5)} stars</span> <button type="button">Save ${name(i)}</button></li>`);
  const pages = [];
  for (let i = 1; i <= 20; i++) pages.push(`<a href="/list.html?page=${i}">Page ${i}</a>`);
  const body = `<h1>All products</h1><p>Showing 250 of 4,012 products</p>
<label for="sort">Sort by</label><select id="sort"><option>Relevance</option><option>Price, low to high</option><option>Price, high to low</option><option>Newest</option></select>
<ul id="results">${items.join("\n")}</ul><nav aria-label="Pagination">${pages.join(" ")}</nav>`;
  writeFileSync(join(dir, "list.html"), page("All products – Trailhead Outfitters", body));
}
