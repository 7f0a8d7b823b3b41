import { test, expect } from '@playwright/test';

test('checkout page shows the order summary', async ({ page }) => {
  await page.goto('/checkout');
  await expect(page.getByRole('main')).toMatchAriaSnapshot(`
    - heading "Checkout" [level=1]
    - textbox "Email"
    - textbox "Address"
    - combobox "Shipping":
      - option "Standard (3-5 days)" [selected]
      - option "Express (1 day)"
    - button "Place order"
    - link "Back to cart":
      - /url: /cart
    - paragraph: Secure checkout
  `);
  await page.getByRole('textbox', { name: 'Email' }).fill('ada@example.com');
  await page.getByRole('button', { name: 'Place order' }).click();
  await expect(page).toHaveURL(/\/thanks/);
});
